// Seeded bugs: each is reported (naming kernel, block, thread and file:line) or shows as a wrong
// answer in at least one thread order; the emulator stays usable afterwards.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/gpu.h"
#include "simt/diagnostics_util.h"
#include "simt/kernels_bugs.cuh"
#include "simt/simt_test_util.h"

namespace ember::simt_test {
namespace {

std::string site(int line) {
  return "kernels_bugs.cuh:" + std::to_string(line);
}

// Under ThreadSanitizer the missing barrier is reported as the data race it is, which fails the
// run; that build checks races, this test checks the thread orders.
#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif

}  // namespace

TEST_CASE("an early return before a barrier is reported as a deadlock") {
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    std::vector<float> out(64);
    const std::string e = error_of(
        [&] { EMBER_LAUNCH(early_return_kernel, dim3(2), dim3(64), 0, nullptr, out.data()); });
    CAPTURE(e);
    CHECK(contains(e, "deadlock"));
    CHECK(contains(e, "early_return_kernel"));
    CHECK(contains(e, "block (0,0,0)"));  // the lowest failing block, whatever the workers
    CHECK(contains(e, "48 threads (first thread ("));
    CHECK(contains(e, site(kEarlyReturnBarrierLine)));
    CHECK(contains(e, "16 threads of the block"));
    check_still_usable();
  }
}

TEST_CASE("threads at different barriers are reported as divergent") {
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    std::vector<float> out(64);
    const std::string e = error_of(
        [&] { EMBER_LAUNCH(divergent_barrier_kernel, dim3(1), dim3(64), 0, nullptr, out.data()); });
    CAPTURE(e);
    CHECK(contains(e, "divergent barriers"));
    CHECK(contains(e, "divergent_barrier_kernel"));
    CHECK(contains(e, site(kDivergentOddLine)));
    CHECK(contains(e, site(kDivergentEvenLine)));
    check_still_usable();
  }
}

TEST_CASE("a shuffle in divergent code is reported") {
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    std::vector<float> out(64);
    const std::string e = error_of(
        [&] { EMBER_LAUNCH(divergent_shuffle_kernel, dim3(1), dim3(64), 0, nullptr, out.data()); });
    CAPTURE(e);
    CHECK(contains(e, "warp collective in divergent code"));
    CHECK(contains(e, "__shfl_down_sync"));
    CHECK(contains(e, site(kShuffleLine)));
    CHECK(contains(e, "has returned"));
    check_still_usable();
  }
}

TEST_CASE("a missing barrier gives a wrong answer in at least one order" *
          doctest::skip(kThreadSanitizer)) {
  const int threads = 64;
  int wrong_orders = 0;
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    std::vector<float> x(threads), y(threads, 0.0f);
    for (int t = 0; t < threads; ++t) x[t] = float(t + 1);
    EMBER_LAUNCH(reverse_missing_barrier_kernel, dim3(1), dim3(threads), threads * sizeof(float),
                 nullptr, x.data(), y.data());
    bool ok = true;
    for (int t = 0; t < threads; ++t) ok = ok && y[t] == float(threads - t);
    wrong_orders += !ok;
  }
  CHECK(wrong_orders > 0);
}

TEST_CASE("launch configurations a GPU refuses are refused with CUDA's error") {
  std::vector<float> out(4096);
  std::string e = error_of(
      [&] { EMBER_LAUNCH(divergent_barrier_kernel, dim3(1), dim3(2048), 0, nullptr, out.data()); });
  CHECK(contains(e, "cudaErrorInvalidConfiguration"));
  CHECK(contains(e, "2048 threads"));
  CHECK(contains(e, "divergent_barrier_kernel"));
  e = error_of(
      [&] { EMBER_LAUNCH(divergent_barrier_kernel, dim3(0), dim3(32), 0, nullptr, out.data()); });
  CHECK(contains(e, "cudaErrorInvalidConfiguration"));
  e = error_of([&] {
    EMBER_LAUNCH(divergent_barrier_kernel, dim3(1), dim3(32, 1, 65), 0, nullptr, out.data());
  });
  CHECK(contains(e, "cudaErrorInvalidConfiguration"));
  e = error_of([&] {
    EMBER_LAUNCH(divergent_barrier_kernel, dim3(1, 65536), dim3(32), 0, nullptr, out.data());
  });
  CHECK(contains(e, "limited to (2^31-1,65535,65535)"));
  check_still_usable();
}

TEST_CASE("a lowered grid limit refuses the grids past it and shows in the device properties") {
  const simt::Options saved = simt::options();
  simt::Options o = saved;
  o.max_grid_yz = 3;
  simt::set_options(o);
  CHECK(gpu::backend(DeviceType::EMU).properties(0).max_grid_z == 3);
  std::vector<float> out(4096);
  std::string e = error_of([&] {
    EMBER_LAUNCH(divergent_barrier_kernel, dim3(1, 1, 4), dim3(32), 0, nullptr, out.data());
  });
  CHECK(contains(e, "limited to (2^31-1,3,3)"));
  simt::set_options(saved);
  CHECK(gpu::backend(DeviceType::EMU).properties(0).max_grid_y == 65535);
  for (unsigned bad : {0u, 65536u}) {
    o.max_grid_yz = bad;
    CHECK_THROWS_AS(simt::set_options(o), ValueError);
  }
  check_still_usable();
}

TEST_CASE("emulator built-ins outside a kernel throw instead of crashing") {
  CHECK_THROWS_AS(__syncthreads(), CudaError);
}

}  // namespace ember::simt_test

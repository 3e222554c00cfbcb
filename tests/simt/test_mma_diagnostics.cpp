// Seeded Tensor Core bugs: each is reported (naming the kernel and the file:line) or shows as a
// wrong answer, in every thread order; the emulator stays usable afterwards.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "simt/diagnostics_util.h"
#include "simt/kernels_mma_bugs.cuh"
#include "simt/simt_test_util.h"

namespace ember::simt_test {
namespace {

std::string site(int line) {
  return "kernels_mma_bugs.cuh:" + std::to_string(line);
}

}  // namespace

TEST_CASE("ldmatrix of a cp.async destination before the wait is reported") {
  std::vector<__half> a(16 * 16, __half(1.0f));
  std::vector<float> out(32);
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    const std::string e = error_of([&] {
      EMBER_LAUNCH(ldmatrix_before_wait_kernel, dim3(2), dim3(32), 0, nullptr, a.data(),
                   out.data());
    });
    CAPTURE(e);
    CHECK(contains(e, "ldmatrix_before_wait_kernel"));
    CHECK(contains(e, "block (0,0,0)"));
    CHECK(contains(e, "ldmatrix.x4 at "));
    CHECK(contains(e, site(kLdmatrixBeforeWaitLine)));
    CHECK(contains(e, "issued at "));
    CHECK(contains(e, site(kCopyLine)));
    CHECK(contains(e, "still pending"));
    check_still_usable();
  }
}

TEST_CASE("reading a cp.async destination before the wait reads NaN") {
  std::vector<float> x(4 * 32), y(32);
  for (int i = 0; i < 4 * 32; ++i) x[i] = float(i);
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    EMBER_LAUNCH(read_before_wait_kernel, dim3(1), dim3(32), 0, nullptr, x.data(), y.data(), true);
    for (int t = 0; t < 32; ++t) REQUIRE(y[t] == x[(4 * t + 5) % (4 * 32)]);
    EMBER_LAUNCH(read_before_wait_kernel, dim3(1), dim3(32), 0, nullptr, x.data(), y.data(), false);
    for (int t = 0; t < 32; ++t) REQUIRE(std::isnan(y[t]));
  }
}

TEST_CASE("a misaligned ldmatrix row address is reported") {
  std::vector<float> out(32);
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    const std::string e = error_of([&] {
      EMBER_LAUNCH(ldmatrix_misaligned_kernel, dim3(1), dim3(32), 0, nullptr, out.data());
    });
    CAPTURE(e);
    CHECK(contains(e, "ldmatrix_misaligned_kernel"));
    CHECK(contains(e, "ldmatrix.x4 at "));
    CHECK(contains(e, site(kMisalignedLine)));
    CHECK(contains(e, "not 16-byte aligned"));
    check_still_usable();
  }
}

TEST_CASE("ldmatrix from global memory is reported, also from the lanes .x1 does not read") {
  std::vector<__half> a(16 * 8, __half(1.0f));
  std::vector<float> out(32);
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    for (bool upper : {false, true}) {
      CAPTURE(upper);
      const std::string e = error_of([&] {
        EMBER_LAUNCH(ldmatrix_global_kernel, dim3(1), dim3(32), 0, nullptr, a.data(), out.data(),
                     upper);
      });
      CAPTURE(e);
      CHECK(contains(e, "ldmatrix_global_kernel"));
      CHECK(contains(e, "ldmatrix.x1 at "));
      CHECK(contains(e, site(kGlobalLine)));
      CHECK(contains(e, "not in the block's shared memory"));
      if (upper) CHECK(contains(e, "on sm_75 every lane's address must be valid"));
      check_still_usable();
    }
  }
}

TEST_CASE("an mma.sync in divergent code is reported") {
  std::vector<float> out(32);
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    const std::string e = error_of(
        [&] { EMBER_LAUNCH(divergent_mma_kernel, dim3(1), dim3(32), 0, nullptr, out.data()); });
    CAPTURE(e);
    CHECK(contains(e, "warp collective in divergent code"));
    CHECK(contains(e, "mma.sync"));
    CHECK(contains(e, site(kDivergentMmaLine)));
    CHECK(contains(e, "has returned"));
    check_still_usable();
  }
}

TEST_CASE("an mma.sync of a partial warp is reported") {
  std::vector<float> out(16);
  const std::string e = error_of(
      [&] { EMBER_LAUNCH(partial_warp_mma_kernel, dim3(1), dim3(16), 0, nullptr, out.data()); });
  CAPTURE(e);
  CHECK(contains(e, "mma.sync.m16n8k8 at "));
  CHECK(contains(e, site(kPartialWarpLine)));
  CHECK(contains(e, "has 16 threads"));
  CHECK(contains(e, "needs a full warp of 32"));
  check_still_usable();
}

TEST_CASE("a cp.async into global memory is reported") {
  std::vector<float> x(4 * 32, 1.0f), y(4 * 32);
  const std::string e = error_of([&] {
    EMBER_LAUNCH(cp_async_to_global_kernel, dim3(1), dim3(32), 0, nullptr, x.data(), y.data());
  });
  CAPTURE(e);
  CHECK(contains(e, "cp.async at "));
  CHECK(contains(e, site(kCopyToGlobalLine)));
  CHECK(contains(e, "not in the block's shared memory"));
  check_still_usable();
}

}  // namespace ember::simt_test

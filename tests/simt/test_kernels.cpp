// Known-good kernels on the emulator, in every thread order and with one and two workers,
// against references computed here in float64 or from closed forms.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "simt/kernels_good.cuh"
#include "simt/simt_test_util.h"

namespace ember::simt_test {
namespace {

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST_CASE("tiled SGEMM matches a float64 reference in every order") {
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const int M = 37, N = 45, K = 29;  // not multiples of the tile
  std::vector<float> A = random_floats(size_t(M) * K, rng), B = random_floats(size_t(K) * N, rng);
  std::vector<double> ref(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) ref[i * N + j] += double(A[i * K + k]) * double(B[k * N + j]);
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    std::vector<float> C(size_t(M) * N, -7.0f);
    EMBER_LAUNCH(sgemm_tiled_kernel, dim3((N + kTile - 1) / kTile, (M + kTile - 1) / kTile),
                 dim3(kTile, kTile), 0, nullptr, M, N, K, A.data(), B.data(), C.data());
    for (size_t i = 0; i < C.size(); ++i) REQUIRE(C[i] == doctest::Approx(ref[i]).epsilon(1e-5));
  }
}

TEST_CASE("block reduction with shuffles and atomics matches a float64 sum in every order") {
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const int n = 100003;
  std::vector<float> x = random_floats(size_t(n), rng);
  double ref = 0.0;
  for (float v : x) ref += v;
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    float out = 0.0f;
    EMBER_LAUNCH(reduce_sum_kernel, dim3(13), dim3(256), 0, nullptr, x.data(), n, &out);
    CHECK(out == doctest::Approx(ref).epsilon(1e-4));
  }
}

TEST_CASE("warp collectives and barrier reductions give CUDA's results") {
  const int threads = 64;
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    std::vector<int> out(threads * 10, -1);
    EMBER_LAUNCH(warp_ops_kernel, dim3(1), dim3(threads), 0, nullptr, out.data());
    for (int t = 0; t < threads; ++t) {
      CAPTURE(t);
      const int lane = t % 32, base = t - lane;
      const int* o = &out[t * 10];
      CHECK(o[0] == base + 3);
      CHECK(o[1] == (lane >= 2 ? t - 2 : t));
      CHECK(o[2] == (lane + 5 < 32 ? t + 5 : t));
      CHECK(o[3] == (t ^ 1));
      CHECK(static_cast<unsigned>(o[4]) == 0x49249249u);  // lanes 0, 3, 6, ..., 30
      CHECK(o[5] == (t >= 32 ? 1 : 0));
      CHECK(o[6] == 0);
      CHECK(o[7] == threads / 4);
      CHECK(o[8] == (t & ~7) + 1);
      CHECK(o[9] == 1 + 2 * 1);
    }
  }
}

TEST_CASE("atomics from several blocks and workers lose no update") {
  const int blocks = 6, threads = 96, total = blocks * threads;
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    int isum = 0, imax = -1, imin = 1, cas[2] = {0, 0};
    unsigned long long usum = 0;
    float fsum = 0.0f;
    double dsum = 0.0;
    unsigned bits = 0;
    EMBER_LAUNCH(atomics_kernel, dim3(blocks), dim3(threads), 0, nullptr, &isum, &usum, &imax,
                 &imin, &fsum, &dsum, cas, &bits);
    CHECK(isum == total * (total - 1) / 2);
    CHECK(usum == static_cast<unsigned long long>(total));
    CHECK(imax == total - 1);
    CHECK(imin == -(total - 1));
    CHECK(fsum == 0.5f * total);
    CHECK(dsum == 0.25 * total);
    CHECK(cas[1] == 1);
    CHECK(cas[0] >= 1);
    CHECK(bits == 0xffffffffu);
  }
}

TEST_CASE("dynamic shared memory: correct with a barrier, opt-in limit enforced") {
  const int threads = 128, blocks = 3;
  std::vector<float> x(threads * blocks);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f;
  for (const Config& c : all_configs()) {
    CAPTURE(c.name());
    ScopedOptions opts(c);
    std::vector<float> y(x.size(), 0.0f);
    EMBER_LAUNCH(reverse_kernel, dim3(blocks), dim3(threads), threads * sizeof(float), nullptr,
                 x.data(), y.data());
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < threads; ++t)
        CHECK(y[b * threads + t] == float(b * threads + threads - 1 - t) * 0.5f);
  }
  std::vector<float> y(x.size());
  CHECK_THROWS_WITH_AS(
      EMBER_LAUNCH(reverse_kernel, dim3(1), dim3(threads), 64 * 1024, nullptr, x.data(), y.data()),
      doctest::Contains("cudaErrorInvalidValue"), CudaError);
  EMBER_SET_MAX_DYNAMIC_SHARED(reverse_kernel, 100 * 1024);
  EMBER_LAUNCH(reverse_kernel, dim3(1), dim3(threads), 64 * 1024, nullptr, x.data(), y.data());
  CHECK(y[0] == x[threads - 1]);
  CHECK_THROWS_AS(EMBER_SET_MAX_DYNAMIC_SHARED(reverse_kernel, 228 * 1024), CudaError);
}

TEST_CASE("EMBER_SIMT_ORDER values parse") {
  simt::Options o = simt::parse_order("random:42", {});
  CHECK(o.order == simt::Order::Random);
  CHECK(o.seed == 42);
  CHECK(simt::parse_order("reverse", {}).order == simt::Order::Reverse);
  CHECK(simt::parse_order("forward", o).order == simt::Order::Forward);
  CHECK_THROWS_AS(simt::parse_order("sideways", {}), ValueError);
  CHECK_THROWS_AS(simt::parse_order("random:x", {}), ValueError);
}

}  // namespace ember::simt_test

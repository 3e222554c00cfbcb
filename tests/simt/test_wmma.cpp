// WMMA on the emulator against float64 references over the 16-bit-rounded inputs.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "runtime/half.h"
#include "simt/kernels_wmma.cuh"
#include "simt/simt_test_util.h"

namespace ember::simt_test {

TEST_CASE("WMMA m16n16k16: half row x col and bf16 row x row with accumulate") {
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const int M = 32, N = 48, K = 64;
  // Inputs as float values already representable in 16 bits, so the reference sees what the
  // kernel sees.
  std::vector<float> a(M * K), b(K * N), c0(M * N);
  for (float& v : a) v = half_bits_to_float(float_to_half_bits(d(rng)));
  for (float& v : b) v = half_bits_to_float(float_to_half_bits(d(rng)));
  for (float& v : c0) v = d(rng);
  std::vector<__half> ah(M * K), bth(N * K);
  for (int i = 0; i < M * K; ++i) ah[i] = __half(a[i]);
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) bth[n * K + k] = __half(b[k * N + n]);
  std::vector<float> ab(M * K), bb(K * N);  // bf16-representable copies
  for (int i = 0; i < M * K; ++i) ab[i] = bf16_bits_to_float(float_to_bf16_bits(a[i]));
  for (int i = 0; i < K * N; ++i) bb[i] = bf16_bits_to_float(float_to_bf16_bits(b[i]));
  std::vector<__nv_bfloat16> abf(ab.begin(), ab.end()), bbf(bb.begin(), bb.end());

  for (const Config& cfg : all_configs()) {
    CAPTURE(cfg.name());
    ScopedOptions opts(cfg);
    std::vector<float> c(M * N, -3.0f);
    EMBER_LAUNCH(wmma_gemm_f16_kernel, dim3(N / 16, M / 16), dim3(32), 0, nullptr, M, N, K,
                 ah.data(), bth.data(), c.data());
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double ref = 0;
        for (int k = 0; k < K; ++k) ref += double(a[m * K + k]) * b[k * N + n];
        REQUIRE(c[m * N + n] == doctest::Approx(ref).epsilon(1e-4).scale(1.0));
      }
    std::vector<float> ccol(M * N);  // column-major copy of c0
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) ccol[n * M + m] = c0[m * N + n];
    EMBER_LAUNCH(wmma_gemm_bf16_kernel, dim3(N / 16, M / 16), dim3(32), 0, nullptr, M, N, K,
                 abf.data(), bbf.data(), ccol.data());
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double ref = c0[m * N + n];
        for (int k = 0; k < K; ++k) ref += double(ab[m * K + k]) * bb[k * N + n];
        REQUIRE(ccol[n * M + m] == doctest::Approx(ref).epsilon(1e-4).scale(1.0));
      }
  }
}

TEST_CASE("WMMA: lanes passing different pointers are reported") {
  std::vector<__half> a(16 * 32, __half(1.0f));
  std::vector<float> c(32);
  std::string e;
  try {
    EMBER_LAUNCH(wmma_divergent_pointer_kernel, dim3(1), dim3(32), 0, nullptr, a.data(), c.data());
  } catch (const CudaError& err) {
    e = err.what();
  }
  CAPTURE(e);
  CHECK(e.find("wmma::load_matrix_sync") != std::string::npos);
  CHECK(e.find("kernels_wmma.cuh:") != std::string::npos);
  CHECK(e.find("all lanes of a warp must pass the same") != std::string::npos);
}

}  // namespace ember::simt_test

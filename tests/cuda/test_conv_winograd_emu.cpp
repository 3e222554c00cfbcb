// Winograd convolution on the GPU backends beyond tests/spec/conv2d.cpp's case table: small
// integers in float64 in every thread order (F(2x2, 3x3) bit for bit), the float32 error within
// its budget, and the heuristic's choice on a GPU device.
#include <doctest/doctest.h>

#include <optional>
#include <random>
#include <string>

#include "cuda/cuda_test_util.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "ops/winograd_test_util.h"

namespace ember::test {

TEST_CASE("emu winograd: small integers in float64, every thread order") {
  ConvPolicyGuard guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  for (const simt_test::Config& order : emu_orders()) {
    simt_test::ScopedOptions scoped(order);
    CAPTURE(order.name());
    for (int64_t pad : {0, 1, 2})
      check_winograd_integers(
          emu(), {"integers", 2, 5, 7, 10, 3, 3, 3, conv_params(1, 1, pad, pad, 1, 1, 1)}, gen);
  }
}

TEST_CASE("emu winograd: the fused kernel loops its channel tiles past the grid's y limit") {
  // 40 output channels are 3 tiles of 16 (the last one short); with the limit lowered to 2,
  // blockIdx.y takes two of them in turn. On a GPU the limit is 65535 and nothing loops.
  ConvPolicyGuard guard;
  std::mt19937 gen(fresh_seed());
  for (const simt_test::Config& order : emu_orders()) {
    simt_test::ScopedOptions scoped(order);
    const ScopedGridLimit limit(2);
    CAPTURE(order.name());
    check_winograd_integers(
        emu(), {"integers", 1, 5, 7, 9, 40, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)}, gen);
  }
}

// Small images, so the emulator runs it in about a second: 16 (F(2x2)) or 4 (F(4x4)) tiles.
TEST_CASE("emu winograd: float32 error within budget (C = 64 and 256)") {
  ConvPolicyGuard guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  for (const std::string& algo : winograd_algos(emu()))
    for (int64_t c : {64, 256}) check_winograd_budget(emu(), algo, 1, c, 8, 8, gen);
}

TEST_CASE("emu winograd: the heuristic takes it for wide 3x3 stride-1 layers only") {
  ConvPolicyGuard guard;
  EmberKernelsOnly ember_only;
  auto chosen = [](const Shape& xs, const Shape& ws, int64_t stride) {
    return ops::explain_conv_algos(ops::conv2d_key(ops::ConvDirection::forward, xs, ws, kFloat32,
                                                   emu(),
                                                   conv_params(stride, stride, 1, 1, 1, 1, 1)))
        .chosen;
  };
  CHECK(chosen({32, 64, 56, 56}, {64, 64, 3, 3}, 1) == "winograd_f4x4_3x3");
  CHECK(chosen({32, 64, 56, 56}, {64, 64, 3, 3}, 2) == "implicit_gemm");
  CHECK(chosen({8, 16, 16, 16}, {32, 16, 3, 3}, 1) == "implicit_gemm");
  CHECK(chosen({32, 64, 56, 56}, {64, 64, 5, 5}, 1) == "implicit_gemm");
}

}  // namespace ember::test

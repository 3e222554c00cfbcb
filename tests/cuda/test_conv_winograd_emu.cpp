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
namespace {

const char* const kWinograd[] = {"winograd_f2x2_3x3", "winograd_f4x4_3x3"};

}  // namespace

TEST_CASE("emu winograd: small integers in float64, every thread order") {
  ConvPolicyGuard guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> small(-3, 3);
  for (const simt_test::Config& order : emu_orders()) {
    simt_test::ScopedOptions scoped(order);
    CAPTURE(order.name());
    for (int64_t pad : {0, 1, 2}) {
      const ConvCase cs{"integers", 2, 5, 7, 10, 3, 3, 3, conv_params(1, 1, pad, pad, 1, 1, 1)};
      const Shape xs{cs.n, cs.c, cs.h, cs.w}, ws{cs.k, cs.c, 3, 3};
      const Shape ys = ops::conv2d_output_shape(xs, ws, cs.p);
      std::vector<double> xv(checked_numel(xs)), wv(checked_numel(ws)), dyv(checked_numel(ys));
      for (double& v : xv) v = small(gen);
      for (double& v : wv) v = small(gen);
      for (double& v : dyv) v = small(gen);
      const ConvRef ref = conv_reference(cs, xv, wv, {}, dyv, ys[2], ys[3]);
      const Tensor x = from_vector(xv, xs, emu()), w = from_vector(wv, ws, emu());
      const Tensor dy = from_vector(dyv, ys, emu());
      for (const char* algo : kWinograd) {
        CAPTURE(algo);
        CAPTURE(pad);
        ops::set_conv_algo(algo);
        const std::vector<double> y = ops::conv2d(x, w, Tensor(), cs.p).to_vector<double>();
        const std::vector<double> dx =
            ops::conv2d_backward_data(dy, w, xs, cs.p).to_vector<double>();
        // F(2x2)'s coefficients are dyadic: exact even with FMA contraction.
        const bool exact = std::string(algo) == "winograd_f2x2_3x3";
        for (size_t i = 0; i < y.size(); ++i)
          if (exact ? y[i] != ref.y[i] : std::abs(y[i] - ref.y[i]) > 1e-10)
            FAIL_CHECK("forward element ", i, ": got ", y[i], ", want ", ref.y[i]);
        for (size_t i = 0; i < dx.size(); ++i)
          if (exact ? dx[i] != ref.dx[i] : std::abs(dx[i] - ref.dx[i]) > 1e-10)
            FAIL_CHECK("backward-data element ", i, ": got ", dx[i], ", want ", ref.dx[i]);
      }
    }
  }
}

// Small images, so the emulator runs it in about a second: 16 (F(2x2)) or 4 (F(4x4)) tiles.
TEST_CASE("emu winograd: float32 error within budget (C = 64 and 256)") {
  ConvPolicyGuard guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  for (const char* algo : kWinograd)
    for (int64_t c : {64, 256}) check_winograd_budget(emu(), algo, 1, c, 8, 8, gen);
}

TEST_CASE("emu winograd: the heuristic takes it for wide 3x3 stride-1 layers only") {
  ConvPolicyGuard guard;
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

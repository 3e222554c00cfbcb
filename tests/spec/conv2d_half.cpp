// conv2d in float16 and bfloat16 on every target (tests/spec/spec.h): forward (with and without
// bias, and fused with relu), backward-data and backward-filter on the case table of
// ops/conv_test_util.h, against the float64 convolution of the same half inputs. A half
// convolution sums in float32 and rounds once (Note [Half convolutions] in ops/conv2d_half.cpp:
// implicit_gemm_tc on cuda and emu, widened_f32 on the cpu), so each element is within
// 1 ulp of the rounded float64 result, or within float32's accumulation error over its terms (16
// float32 ulps of the sum of their magnitudes) where cancellation leaves a result small next to
// them. The algorithms themselves are
// tests/spec/conv2d.cpp's; mixed dtypes are refused with a DTypeError.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

using ops::ConvDirection;

// `what`: which result, and the algorithm that computed it (reported with a mismatch).
void check_half_conv(const std::string& what, const Tensor& got, Device dev, DType t,
                     const Shape& shape, const std::vector<double>& want,
                     const std::vector<double>& abs_sum) {
  CAPTURE(what);
  check_result_each(got, dev, t, shape, want, [&](size_t i) {
    return Tolerance{0, 16 * 1.2e-7 * abs_sum[i] + 1e-30, 1};
  });
}

std::vector<double> relu_of(std::vector<double> v) {
  for (double& e : v) e = std::max(e, 0.0);
  return v;
}

}  // namespace

TEST_CASE("conv2d in float16 and bfloat16: every direction, against float64 loops, every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    const std::vector<ConvCase>& cases = conv_cases();
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const ConvCase& cs = cases[ci];
      if (cs.only != nullptr) continue;  // one algorithm's tiles: tests/spec/conv2d.cpp
      // On the emulator each case runs in one of the three thread orders.
      if (dev.is_emu() && (ci + static_cast<size_t>(simt::options().order)) % 3 != 0) continue;
      const std::string case_name = cs.name;
      CAPTURE(case_name);
      const Shape xs{cs.n, cs.c, cs.h, cs.w}, ws{cs.k, cs.c / cs.p.groups, cs.r, cs.s};
      const Shape ys = ops::conv2d_output_shape(xs, ws, cs.p);
      for (DType t : {kFloat16, kBFloat16}) {
        CAPTURE(t);
        const Layout layout = ci % 2 == 0 ? Layout::contiguous : Layout::sliced;
        const Tensor x = random_operand(xs, t, layout, -1, 1, g, 0.0, dev);
        const Tensor w = random_operand(ws, t, Layout::transposed, -1, 1, g, 0.0, dev);
        const Tensor b = random_tensor({cs.k}, t, -1, 1, g).to(dev);
        const Tensor dy = random_operand(ys, t, layout, -1, 1, g, 0.0, dev);
        const ConvRef ref =
            conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(), b.to_vector<double>(),
                           dy.to_vector<double>(), ys[2], ys[3]);
        const ConvRef ref_nobias =
            conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(), {}, {}, ys[2], ys[3]);
        auto by = [&](const char* result, ConvDirection d) {
          const ops::ConvKey key = ops::conv2d_key(d, xs, ws, t, dev, cs.p);
          return std::string(result) + " by " + ops::explain_conv_algos(key).chosen;
        };
        const std::string fwd = by("forward", ConvDirection::forward);
        check_half_conv(fwd + ", bias (cuDNN's fused graph where it has one)",
                        ops::conv2d(x, w, b, cs.p), dev, t, ys, ref.y, ref.y_abs);
        check_half_conv(fwd, ops::conv2d(x, w, Tensor(), cs.p), dev, t, ys, ref_nobias.y,
                        ref_nobias.y_abs);
        check_half_conv(fwd + ", bias and relu (cuDNN's fused graph where it has one)",
                        ops::conv2d_bias_relu(x, w, b, cs.p), dev, t, ys, relu_of(ref.y),
                        ref.y_abs);
        // With a residual: conv rounded to t once (u: t's unit roundoff, of |y|), then the sum
        // rounded (within an ulp of |y| + |z|), as conv2d then add.
        const std::vector<double> z = dy.to_vector<double>();
        const double u = t == kFloat16 ? 0x1p-11 : 0x1p-8;
        std::vector<double> sum(z.size());
        for (size_t i = 0; i < z.size(); ++i) sum[i] = std::max(ref.y[i] + z[i], 0.0);
        const std::string residual =
            fwd + ", bias (cuDNN's fused graph where it has one), then the residual and relu";
        CAPTURE(residual);
        check_result_each(ops::conv2d_bias_add_clamp(x, w, b, dy, cs.p, 0.0,
                                                     std::numeric_limits<double>::infinity()),
                          dev, t, ys, sum, [&](size_t i) {
                            const double conv = 16 * 1.2e-7 * (ref.y_abs[i] + std::abs(z[i]));
                            const double y = std::abs(ref.y[i]), zi = std::abs(z[i]);
                            return Tolerance{0, conv + u * y + 2 * u * (y + zi) + 1e-30, 1};
                          });
        check_half_conv(by("backward-data", ConvDirection::backward_data),
                        ops::conv2d_backward_data(dy, w, xs, cs.p), dev, t, xs, ref.dx, ref.dx_abs);
        check_half_conv(by("backward-filter", ConvDirection::backward_filter),
                        ops::conv2d_backward_filter(dy, x, ws, cs.p), dev, t, ws, ref.dw,
                        ref.dw_abs);
      }
    }
  });
}

TEST_CASE("conv2d refuses mixed half and float32 operands with a DTypeError, every target") {
  std::mt19937 g(7);
  for_each_target([&](Device dev) {
    const Tensor x = random_tensor({1, 2, 5, 5}, kFloat16, -1, 1, g).to(dev);
    const Tensor w = random_tensor({3, 2, 3, 3}, kFloat32, -1, 1, g).to(dev);
    CHECK_THROWS_WITH_AS(ops::conv2d(x, w, Tensor(), {}),
                         doctest::Contains("must have the same dtype, got float16 and float32"),
                         DTypeError);
    CHECK_THROWS_AS(ops::conv2d(x, w.to(kBFloat16), Tensor(), {}), DTypeError);
  });
}

}  // namespace ember::test

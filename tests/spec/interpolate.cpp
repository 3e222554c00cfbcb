// F.interpolate (nearest, linear, bilinear) on every target (tests/spec/spec.h) against PyTorch's
// source-index rules written out here (UpSample.h: the index computed in float for float32 and
// the half types, double for float64; nearest in float) and the interpolation in float64; the
// backward against a float64 scatter of the output gradient onto each output's taps (the kernels
// gather). Up- and down-sampling by sizes and by scale factors (1 / scale in the index, or
// recomputed), align_corners true and false, sizes of 1, non-contiguous and empty inputs,
// float32, float64, float16 and bfloat16. Typed errors for bad sizes.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/interpolate.h"
#include "ops/interpolate.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

using ops::InterpMode;

struct Taps {
  int64_t i0, i1;
  double l0, l1;
};

// PyTorch's taps of output coordinate o along a dim of `in` -> `out`, scale factor s (0: none).
template <typename C>
Taps taps(InterpMode mode, bool align, int64_t in, int64_t out, double s, int64_t o) {
  if (mode == InterpMode::nearest) {
    int64_t i;
    if (out == in) {
      i = o;
    } else if (out == 2 * in) {
      i = o / 2;
    } else {
      const float scale = s > 0 ? static_cast<float>(1.0 / s) : float(in) / float(out);
      i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
    }
    return {i, i, 1.0, 0.0};
  }
  C scale = align ? (out > 1 ? C(in - 1) / C(out - 1) : C(0))
                  : (s > 0 ? static_cast<C>(1.0 / s) : C(in) / C(out));
  C real = align ? scale * C(o) : scale * (C(o) + C(0.5)) - C(0.5);
  if (real < 0) real = 0;
  const int64_t i0 = static_cast<int64_t>(real);
  const double l1 = std::min(static_cast<double>(real - C(i0)), 1.0);
  return {i0, i0 < in - 1 ? i0 + 1 : i0, 1.0 - l1, l1};
}

struct InterpCase {
  Shape shape;  // [N, C, W] or [N, C, H, W]
  std::vector<int64_t> size;
  std::vector<double> scales;  // passed to the index rule (empty: none)
  InterpMode mode;
  bool align = false;
  Layout layout = Layout::contiguous;
};

void check_interp(const InterpCase& c, DType t, Device dev, std::mt19937& gen) {
  const bool two_d = c.shape.size() == 4;
  const int64_t planes = c.shape[0] * c.shape[1];
  const int64_t ih = two_d ? c.shape[2] : 1, iw = c.shape.back();
  const int64_t oh = two_d ? c.size[0] : 1, ow = c.size.back();
  const double sh = two_d && !c.scales.empty() ? c.scales[0] : 0.0;
  const double sw = c.scales.empty() ? 0.0 : c.scales.back();
  Shape ys{c.shape[0], c.shape[1]};
  for (int64_t v : c.size) ys.push_back(v);
  const Tensor x = random_operand(c.shape, t, c.layout, -3, 3, gen, 0.0, dev);
  const Tensor dy = random_tensor(ys, t, -1, 1, gen).to(dev);
  const std::vector<double> xv = x.to_vector<double>(), gv = dy.to_vector<double>();
  std::vector<double> want(static_cast<size_t>(checked_numel(ys))), dx(xv.size(), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t q = 0; q < ow; ++q) {
        const Taps h = t == kFloat64 ? taps<double>(c.mode, c.align, ih, oh, sh, r)
                                     : taps<float>(c.mode, c.align, ih, oh, sh, r);
        const Taps w = t == kFloat64 ? taps<double>(c.mode, c.align, iw, ow, sw, q)
                                     : taps<float>(c.mode, c.align, iw, ow, sw, q);
        const size_t e = static_cast<size_t>((p * oh + r) * ow + q);
        auto at = [&](int64_t i, int64_t j) { return static_cast<size_t>((p * ih + i) * iw + j); };
        want[e] = h.l0 * (w.l0 * xv[at(h.i0, w.i0)] + w.l1 * xv[at(h.i0, w.i1)]) +
                  h.l1 * (w.l0 * xv[at(h.i1, w.i0)] + w.l1 * xv[at(h.i1, w.i1)]);
        dx[at(h.i0, w.i0)] += h.l0 * w.l0 * gv[e];
        dx[at(h.i0, w.i1)] += h.l0 * w.l1 * gv[e];
        dx[at(h.i1, w.i0)] += h.l1 * w.l0 * gv[e];
        dx[at(h.i1, w.i1)] += h.l1 * w.l1 * gv[e];
      }
  ops::InterpolateParams p;
  p.size = c.size;
  p.scales = c.scales;
  p.mode = c.mode;
  p.align_corners = c.align;
  check_result(ops::interpolate(x, p), dev, t, ys, want);
  // An input gradient sums up to (2 * out / in + 2)^2 weighted terms.
  check_result(ops::interpolate_backward(dy, c.shape, p), dev, t, c.shape, dx,
               scaled_tolerance(t, 4));
}

}  // namespace

TEST_CASE("interpolate and its backward op match PyTorch's rules in float64 on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  using M = InterpMode;
  const InterpCase cases[] = {
      {{2, 3, 5, 7}, {9, 4}, {}, M::nearest, false, Layout::transposed},
      {{1, 2, 5, 6}, {10, 12}, {2.0, 2.0}, M::nearest},
      {{1, 2, 5, 6}, {5, 6}, {}, M::nearest, false, Layout::sliced},
      {{2, 1, 9, 8}, {4, 4}, {0.5, 0.5}, M::nearest},
      {{1, 2, 5, 7}, {8, 16}, {1.7, 2.3}, M::nearest},
      {{1, 2, 5, 7}, {8, 16}, {}, M::nearest},  // the sizes of 1.7x, 2.3x with recomputed scales
      {{2, 3, 5}, {11}, {}, M::nearest, false, Layout::transposed},
      {{2, 3, 5, 7}, {9, 4}, {}, M::linear, false, Layout::transposed},
      {{2, 3, 5, 7}, {9, 4}, {}, M::linear, true},
      {{1, 2, 6, 5}, {12, 10}, {2.0, 2.0}, M::linear, false, Layout::sliced},
      {{1, 2, 6, 5}, {12, 10}, {2.0, 2.0}, M::linear, true},
      {{1, 1, 8, 9}, {3, 4}, {}, M::linear, false},
      {{1, 1, 8, 9}, {3, 4}, {}, M::linear, true},
      {{1, 1, 1, 1}, {3, 3}, {}, M::linear, false},
      {{1, 2, 4, 4}, {1, 1}, {}, M::linear, true},
      {{1, 2, 5, 7}, {8, 16}, {1.7, 2.3}, M::linear, false},
      {{2, 3, 5}, {13}, {}, M::linear, false, Layout::transposed},
      {{2, 3, 5}, {13}, {}, M::linear, true},
      {{0, 3, 4, 4}, {8, 8}, {}, M::linear, false},
  };
  for_each_target([&](Device dev) {
    for (const InterpCase& c : cases)
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
        CAPTURE(c.shape);
        CAPTURE(Shape(c.size));
        CAPTURE(static_cast<int>(c.mode));
        CAPTURE(c.align);
        CAPTURE(t);
        check_interp(c, t, dev, gen);
      }
  });
}

TEST_CASE("interpolate: PyTorch's argument rules and typed errors on every target") {
  for_each_target([&](Device dev) {
    const Tensor x = zeros({1, 2, 3, 4}, {kFloat32, dev});
    CHECK(interpolate(x, {}, {2.5}, "bilinear").shape() == Shape{1, 2, 7, 10});
    CHECK(interpolate(x, {5}, {}, "nearest").shape() == Shape{1, 2, 5, 5});
    CHECK(interpolate(x, {}, {1.5, 0.5}, "nearest").shape() == Shape{1, 2, 4, 2});
    CHECK_THROWS_WITH_AS(interpolate(x, {4, 4}, {2.0}), doctest::Contains("only one of"),
                         ValueError);
    CHECK_THROWS_WITH_AS(interpolate(x, {}, {}), doctest::Contains("either size or scale_factor"),
                         ValueError);
    CHECK_THROWS_WITH_AS(interpolate(x, {4, 4}, {}, "nearest", true),
                         doctest::Contains("align_corners"), ValueError);
    CHECK_THROWS_WITH_AS(interpolate(x, {4, 4}, {}, "bicubic"), doctest::Contains("'bicubic'"),
                         ValueError);
    CHECK_THROWS_AS(interpolate(x, {4, 4}, {}, "linear"), ShapeError);
    CHECK_THROWS_AS(interpolate(x, {4, 4, 4}, {}, "bilinear"), ValueError);
    CHECK_THROWS_AS(interpolate(x, {}, {0.1}, "bilinear"), ValueError);  // an output of size 0
    CHECK_THROWS_AS(interpolate(x, {}, {-1.0}, "nearest"), ValueError);
  });
}

}  // namespace ember::test

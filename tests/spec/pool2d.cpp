// Pooling on every target (tests/spec/spec.h) against naive float64 loops written here (windows,
// divisors and output sizes worked out independently of the op): max and average pooling forward
// and backward with ceil_mode, padding, strides, dilation, count_include_pad and divisor_override,
// ties (first maximum) and NaN; adaptive average pooling with sizes that do not divide; output
// sizes by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ops/pool2d.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

struct Case {
  const char* name;
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode, count_include_pad;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"2x2 stride 2", 2, 3, 8, 6, 2, 2, 2, 2, 0, 0, 1, 1, false, true},
      {"odd size, ceil_mode", 1, 2, 7, 5, 2, 2, 2, 2, 0, 0, 1, 1, true, true},
      {"3x3 s2 p1", 2, 3, 9, 10, 3, 3, 2, 2, 1, 1, 1, 1, false, true},
      {"3x3 s2 p1 ceil, exclude pad", 2, 3, 10, 9, 3, 3, 2, 2, 1, 1, 1, 1, true, false},
      {"ceil drops a window starting in the padding", 1, 2, 5, 5, 2, 2, 2, 2, 1, 1, 1, 1, true,
       true},
      {"ceil, last window in padding, exclude pad", 1, 1, 4, 4, 2, 2, 3, 3, 1, 1, 1, 1, true,
       false},
      {"asymmetric", 3, 2, 11, 7, 3, 2, 2, 1, 1, 0, 1, 1, true, true},
      {"dilation 2 (max only)", 2, 2, 9, 9, 3, 3, 1, 2, 1, 1, 2, 2, false, true},
      {"dilation 2 ceil (max only)", 1, 3, 10, 8, 2, 3, 3, 2, 1, 1, 2, 1, true, true},
      {"window = input", 2, 1, 4, 5, 4, 5, 1, 1, 0, 0, 1, 1, false, true},
      {"3x2 s3 p1 ceil, 7 channels", 1, 7, 13, 11, 3, 2, 3, 3, 1, 1, 1, 1, true, true},
      {"3x3 s(1,2) p(1,0) dilation 2", 2, 3, 13, 11, 3, 3, 1, 2, 1, 0, 2, 2, false, false},
      {"2x3 s(3,2) p1 dilation (2,1) ceil", 1, 5, 7, 9, 2, 3, 3, 2, 1, 1, 2, 1, true, true},
      {"1x1", 2, 3, 5, 4, 1, 1, 1, 1, 0, 0, 1, 1, false, true},
  };
  return c;
}

// Output size by counting window starts: start = o*stride - pad; a window is kept while its
// dilated extent fits the padded input (floor). With ceil_mode one more, partial window is
// kept when the previous one left some of the padded input uncovered and it starts inside the
// input or the left padding (not in the right padding).
int64_t ref_out(int64_t in, int64_t k, int64_t st, int64_t pad, int64_t dil, bool ceil_mode) {
  const int64_t extent = dil * (k - 1) + 1;
  int64_t out = 0;
  for (int64_t o = 0;; ++o) {
    const int64_t start = o * st - pad;
    if (start + extent <= in + pad) {
      out = o + 1;
      continue;
    }
    const bool uncovered = o == 0 || (o - 1) * st - pad + extent < in + pad;
    if (ceil_mode && uncovered && start < in) out = o + 1;
    return out;
  }
}

struct PoolRef {
  std::vector<double> max, avg, dmax, davg;
  std::vector<int64_t> idx;
  int64_t oh, ow;
};

// Max pooling (dilated taps, first maximum, NaN wins) and average pooling (undilated taps, the
// divisor by count_include_pad or `divisor` when it is not 0), forward and backward.
PoolRef reference(const Case& cs, const std::vector<double>& x, const std::vector<double>& dy_max,
                  const std::vector<double>& dy_avg, int64_t oh, int64_t ow, int64_t divisor = 0) {
  PoolRef r;
  r.oh = oh, r.ow = ow;
  r.dmax.assign(x.size(), 0.0);
  r.davg.assign(x.size(), 0.0);
  for (int64_t p = 0; p < cs.n * cs.c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t o = (p * oh + i) * ow + j;
        double best = -std::numeric_limits<double>::infinity();
        int64_t at = -1;
        double sum = 0;
        int64_t inside = 0, padded_rows = 0, padded_cols = 0;
        // Max: dilated taps. Avg: undilated taps; positions up to in + pad count as padding.
        for (int64_t a = 0; a < cs.kh; ++a)
          for (int64_t b = 0; b < cs.kw; ++b) {
            const int64_t ih = i * cs.sh - cs.ph + a * cs.dh, iw = j * cs.sw - cs.pw + b * cs.dw;
            if (ih >= 0 && ih < cs.h && iw >= 0 && iw < cs.w) {
              const double v = x[p * cs.h * cs.w + ih * cs.w + iw];
              if (at < 0 || (!std::isnan(best) && (v > best || std::isnan(v))))
                best = v, at = ih * cs.w + iw;
            }
          }
        for (int64_t a = 0; a < cs.kh; ++a) padded_rows += i * cs.sh - cs.ph + a < cs.h + cs.ph;
        for (int64_t b = 0; b < cs.kw; ++b) padded_cols += j * cs.sw - cs.pw + b < cs.w + cs.pw;
        for (int64_t a = 0; a < cs.kh; ++a)
          for (int64_t b = 0; b < cs.kw; ++b) {
            const int64_t ih = i * cs.sh - cs.ph + a, iw = j * cs.sw - cs.pw + b;
            if (ih >= 0 && ih < cs.h && iw >= 0 && iw < cs.w) {
              sum += x[p * cs.h * cs.w + ih * cs.w + iw];
              ++inside;
            }
          }
        const double div =
            divisor != 0
                ? static_cast<double>(divisor)
                : static_cast<double>(cs.count_include_pad ? padded_rows * padded_cols : inside);
        r.max.push_back(best);
        r.idx.push_back(at);
        r.avg.push_back(sum / div);
        r.dmax[p * cs.h * cs.w + at] += dy_max[o];
        for (int64_t a = 0; a < cs.kh; ++a)
          for (int64_t b = 0; b < cs.kw; ++b) {
            const int64_t ih = i * cs.sh - cs.ph + a, iw = j * cs.sw - cs.pw + b;
            if (ih >= 0 && ih < cs.h && iw >= 0 && iw < cs.w)
              r.davg[p * cs.h * cs.w + ih * cs.w + iw] += dy_avg[o] / div;
          }
      }
  return r;
}

}  // namespace

TEST_CASE("pool2d: output sizes match PyTorch's, worked by hand") {
  // (in, kernel, pad, stride, dilation, ceil_mode) -> out, from PyTorch's formula by hand.
  CHECK(ops::pool_output_size(5, 2, 0, 2, 1, false) == 2);
  CHECK(ops::pool_output_size(5, 2, 0, 2, 1, true) == 3);
  CHECK(ops::pool_output_size(5, 2, 1, 2, 1, true) == 3);  // a 4th window would start in padding
  CHECK(ops::pool_output_size(4, 2, 1, 3, 1, true) == 2);  // likewise
  CHECK(ops::pool_output_size(7, 3, 1, 2, 1, true) == 4);
  CHECK(ops::pool_output_size(10, 3, 0, 1, 2, false) == 6);
  CHECK(ops::pool_output_size(32, 3, 1, 2, 1, false) == 16);
  CHECK(ops::pool_output_size(32, 3, 1, 2, 1, true) == 17);  // last window starts at 31
  CHECK(ops::pool_output_size(33, 3, 1, 2, 1, true) == 17);
  for (const Case& cs : cases()) {
    CAPTURE(cs.name);
    CHECK(ops::pool_output_size(cs.h, cs.kh, cs.ph, cs.sh, cs.dh, cs.ceil_mode) ==
          ref_out(cs.h, cs.kh, cs.sh, cs.ph, cs.dh, cs.ceil_mode));
    CHECK(ops::pool_output_size(cs.w, cs.kw, cs.pw, cs.sw, cs.dw, cs.ceil_mode) ==
          ref_out(cs.w, cs.kw, cs.sw, cs.pw, cs.dw, cs.ceil_mode));
  }
}

TEST_CASE("pool2d: max and avg, forward and backward, against float64 loops on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (const Case& cs : cases()) {
      const std::string name = cs.name;
      CAPTURE(name);
      const int64_t oh = ref_out(cs.h, cs.kh, cs.sh, cs.ph, cs.dh, cs.ceil_mode);
      const int64_t ow = ref_out(cs.w, cs.kw, cs.sw, cs.pw, cs.dw, cs.ceil_mode);
      // Average pooling has no dilation: its windows are the undilated ones.
      const int64_t aoh = ref_out(cs.h, cs.kh, cs.sh, cs.ph, 1, cs.ceil_mode);
      const int64_t aow = ref_out(cs.w, cs.kw, cs.sw, cs.pw, 1, cs.ceil_mode);
      const Shape xs{cs.n, cs.c, cs.h, cs.w}, ys{cs.n, cs.c, oh, ow}, as{cs.n, cs.c, aoh, aow};
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
        for (Layout layout : {Layout::contiguous, Layout::sliced, Layout::transposed}) {
          CAPTURE(t);
          CAPTURE(layout);
          // Multiples of 0.25 in [-2, 2]: ties are common, so the first-maximum rule is tested.
          const Tensor x = random_operand(xs, t, layout, -2, 2, g, 0.25, dev);
          const Tensor dym = random_operand(ys, t, Layout::contiguous, -1, 1, g, 0.0, dev);
          const Tensor dya = random_operand(as, t, Layout::transposed, -1, 1, g, 0.0, dev);
          const std::vector<double> xv = x.to_vector<double>();
          const PoolRef rm = reference(cs, xv, dym.to_vector<double>(),
                                       std::vector<double>(cs.n * cs.c * oh * ow, 0.0), oh, ow);
          ops::MaxPool2dParams mp;
          mp.kernel = {cs.kh, cs.kw}, mp.stride = {cs.sh, cs.sw}, mp.padding = {cs.ph, cs.pw};
          mp.dilation = {cs.dh, cs.dw}, mp.ceil_mode = cs.ceil_mode;
          const auto [y, idx] = ops::max_pool2d(x, mp);
          check_result(y, dev, t, ys, rm.max);
          CHECK(idx.device() == dev);
          CHECK(idx.dtype() == kInt64);
          CHECK(idx.to_vector<int64_t>() == rm.idx);
          check_result(ops::max_pool2d_backward(dym, idx, xs), dev, t, xs, rm.dmax);
          // Without indices (on cuda, cuDNN's pooling where it serves), and the backward from x
          // and y: the same values, and the gradient at each window's first maximum.
          const Tensor y2 = ops::max_pool2d(x, mp, /*need_indices=*/false).first;
          check_result(y2, dev, t, ys, rm.max);
          check_result(ops::max_pool2d_backward(dym, x, y2, mp), dev, t, xs, rm.dmax);
          // Average pooling with both count_include_pad settings and a divisor override.
          for (bool include_pad : {true, false}) {
            for (int64_t divisor : {0, 5}) {
              CAPTURE(include_pad);
              CAPTURE(divisor);
              Case c = cs;
              c.count_include_pad = include_pad;
              const PoolRef ra = reference(c, xv, std::vector<double>(checked_numel(as), 0.0),
                                           dya.to_vector<double>(), aoh, aow, divisor);
              ops::AvgPool2dParams ap;
              ap.kernel = {cs.kh, cs.kw}, ap.stride = {cs.sh, cs.sw}, ap.padding = {cs.ph, cs.pw};
              ap.ceil_mode = cs.ceil_mode, ap.count_include_pad = include_pad;
              ap.divisor_override = divisor;
              check_result(ops::avg_pool2d(x, ap), dev, t, as, ra.avg);
              check_result(ops::avg_pool2d_backward(dya, xs, ap), dev, t, xs, ra.davg);
            }
          }
        }
      }
    }
  });
}

TEST_CASE("pool2d: hand-computed examples and NaN on every target") {
  for_each_target([&](Device dev) {
    // 3x3 input 1..9, kernel 2, stride 2, ceil_mode: windows {1,2,4,5}, {3,6}, {7,8}, {9}.
    std::vector<double> v(9);
    for (int i = 0; i < 9; ++i) v[i] = i + 1;
    const Tensor x = from_vector(v, {1, 1, 3, 3}).to(dev);
    ops::MaxPool2dParams mp;
    mp.kernel = {2, 2}, mp.ceil_mode = true;
    const auto [y, idx] = ops::max_pool2d(x, mp);
    check_result(y, dev, kFloat64, {1, 1, 2, 2}, {5, 6, 8, 9});
    CHECK(idx.to_vector<int64_t>() == std::vector<int64_t>{4, 5, 7, 8});
    ops::AvgPool2dParams ap;
    ap.kernel = {2, 2}, ap.ceil_mode = true;
    check_values(ops::avg_pool2d(x, ap), {3, 4.5, 7.5, 9}, kFloat64);
    // Padding 1, kernel 2, stride 2, count_include_pad: windows {1}/4, {2,3}/4, {4,7}/4, ...
    ap.ceil_mode = false, ap.padding = {1, 1};
    check_values(ops::avg_pool2d(x, ap), {0.25, 1.25, 2.75, 7}, kFloat64);
    ap.count_include_pad = false;
    check_values(ops::avg_pool2d(x, ap), {1, 2.5, 5.5, 7}, kFloat64);
    ap.divisor_override = 3;
    check_values(ops::avg_pool2d(x, ap), {1.0 / 3, 5.0 / 3, 11.0 / 3, 28.0 / 3}, kFloat64);
    // NaN propagates through max pooling, with its own index; the first NaN of a window wins.
    v[4] = v[5] = std::nan("");
    const auto [yn, in] = ops::max_pool2d(from_vector(v, {1, 1, 3, 3}).to(dev, kFloat32), mp);
    const std::vector<double> yv = yn.to_vector<double>();
    CHECK(std::isnan(yv[0]));
    CHECK(std::isnan(yv[1]));
    CHECK(yv[2] == 8);
    CHECK(in.to_vector<int64_t>() == std::vector<int64_t>{4, 5, 7, 8});
  });
}

TEST_CASE("adaptive_avg_pool2d against float64 loops on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  struct A {
    int64_t n, c, h, w, oh, ow;
  };
  const A cases[] = {{2, 3, 7, 5, 3, 2}, {1, 2, 4, 4, 1, 1},    {2, 1, 5, 9, 5, 4},
                     {1, 3, 3, 2, 5, 4}, {3, 2, 10, 6, 4, 6},   {1, 3, 13, 11, 5, 3},
                     {1, 3, 4, 5, 7, 9}, {2, 3, 13, 11, 13, 11}};
  for_each_target([&](Device dev) {
    for (const A& a : cases) {
      CAPTURE(a.h);
      CAPTURE(a.w);
      CAPTURE(a.oh);
      CAPTURE(a.ow);
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
        const Shape xs{a.n, a.c, a.h, a.w}, ys{a.n, a.c, a.oh, a.ow};
        const Tensor x = random_operand(xs, t, Layout::sliced, -1, 1, g, 0.0, dev);
        const Tensor dy = random_operand(ys, t, Layout::transposed, -1, 1, g, 0.0, dev);
        const std::vector<double> xv = x.to_vector<double>(), dv = dy.to_vector<double>();
        std::vector<double> want, dwant(xv.size(), 0.0);
        for (int64_t p = 0; p < a.n * a.c; ++p)
          for (int64_t i = 0; i < a.oh; ++i)
            for (int64_t j = 0; j < a.ow; ++j) {
              const auto h0 = static_cast<int64_t>(std::floor(double(i) * a.h / a.oh));
              const auto h1 = static_cast<int64_t>(std::ceil(double(i + 1) * a.h / a.oh));
              const auto w0 = static_cast<int64_t>(std::floor(double(j) * a.w / a.ow));
              const auto w1 = static_cast<int64_t>(std::ceil(double(j + 1) * a.w / a.ow));
              double s = 0;
              const double cnt = double((h1 - h0) * (w1 - w0));
              for (int64_t ih = h0; ih < h1; ++ih)
                for (int64_t iw = w0; iw < w1; ++iw) {
                  s += xv[(p * a.h + ih) * a.w + iw];
                  dwant[(p * a.h + ih) * a.w + iw] += dv[(p * a.oh + i) * a.ow + j] / cnt;
                }
              want.push_back(s / cnt);
            }
        check_result(ops::adaptive_avg_pool2d(x, {a.oh, a.ow}), dev, t, ys, want);
        check_result(ops::adaptive_avg_pool2d_backward(dy, xs), dev, t, xs, dwant);
      }
    }
  });
}

}  // namespace ember::test

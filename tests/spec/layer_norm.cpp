// Layer, group and instance norm on every target (tests/spec/spec.h) against their textbook
// definitions in float64 loops: per-row mean and biased variance, the affine per element (layer)
// or per channel (group, instance), and the hand-derived gradients dx = rstd (gw - mean(gw) -
// xhat mean(gw xhat)) with gw = dy * weight, dweight = sum dy xhat, dbias = sum dy. Odd shapes,
// rows past a warp's reach (one block per row on a GPU), 2-D to 5-D inputs, transposed and sliced
// views, offsets far from zero, empty tensors, with and without the affine; float32, float64,
// float16 and bfloat16 (statistics in float32).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "ops/layer_norm.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

struct NormRef {
  std::vector<double> y, mean, rstd, dx, dw, db;
};

// rows of `len` elements; channel(r, j) gives the affine's index, `channels` of them.
NormRef norm_reference(int64_t rows, int64_t len, int64_t channels,
                       const std::function<int64_t(int64_t, int64_t)>& channel,
                       const std::vector<double>& x, const std::vector<double>& w,
                       const std::vector<double>& b, const std::vector<double>& dy, double eps) {
  NormRef r;
  r.y.resize(x.size());
  r.dx.resize(x.size());
  r.dw.assign(static_cast<size_t>(channels), 0.0);
  r.db.assign(static_cast<size_t>(channels), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const double* xr = x.data() + i * len;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < len; ++j) mean += xr[j];
    mean /= static_cast<double>(len);
    for (int64_t j = 0; j < len; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= static_cast<double>(len);
    const double rstd = 1 / std::sqrt(var + eps);
    r.mean.push_back(mean);
    r.rstd.push_back(rstd);
    double sum_gw = 0, sum_gw_xhat = 0;
    for (int64_t j = 0; j < len; ++j) {
      const int64_t c = channel(i, j);
      const double xhat = (xr[j] - mean) * rstd, g = dy[i * len + j];
      const double gw = g * (w.empty() ? 1.0 : w[c]);
      r.y[i * len + j] = xhat * (w.empty() ? 1.0 : w[c]) + (b.empty() ? 0.0 : b[c]);
      sum_gw += gw;
      sum_gw_xhat += gw * xhat;
      r.dw[c] += g * xhat;
      r.db[c] += g;
    }
    for (int64_t j = 0; j < len; ++j) {
      const int64_t c = channel(i, j);
      const double xhat = (xr[j] - mean) * rstd;
      const double gw = dy[i * len + j] * (w.empty() ? 1.0 : w[c]);
      r.dx[i * len + j] = rstd * (gw - sum_gw / len - xhat * sum_gw_xhat / len);
    }
  }
  return r;
}

DType stat_dtype(DType t) {
  return t == kFloat64 ? kFloat64 : kFloat32;
}

// The statistics of a half input are float32 computations on half values: float32's tolerance.
Tolerance stat_tolerance(DType t) {
  return default_tolerance(stat_dtype(t));
}

enum class Kind { layer, group, instance };

struct NormCase {
  Kind kind;
  Shape shape;
  int64_t k;  // layer: trailing dims normalised; group: num_groups
  Layout layout;
  double offset;       // added to every value: statistics far from zero
  bool large = false;  // Note [Large cases] in spec.h
  // An output over 8 MB, which the cpu writes with streaming stores (Note [Streaming stores] in
  // kernels/cpu/loops.h): run on the cpu only (minutes on the emulator).
  bool streamed = false;
};

void check_case(const NormCase& c, DType t, bool affine, Device dev, std::mt19937& gen) {
  const Shape& s = c.shape;
  const int64_t numel = checked_numel(s);
  Shape pshape;
  int64_t rows = 0, len = 0, channels = 0;
  std::function<int64_t(int64_t, int64_t)> channel;
  if (c.kind == Kind::layer) {
    pshape = Shape(std::vector<int64_t>(s.end() - c.k, s.end()));
    len = checked_numel(pshape);
    rows = len == 0 ? checked_numel(Shape(std::vector<int64_t>(s.begin(), s.end() - c.k)))
                    : numel / len;
    channels = len;
    channel = [](int64_t, int64_t j) { return j; };
  } else {
    const int64_t n = s[0], ch = s[1], groups = c.kind == Kind::group ? c.k : ch;
    const int64_t hw = numel / std::max<int64_t>(n * ch, 1);
    pshape = {ch};
    rows = n * groups;
    len = ch / groups * hw;
    channels = ch;
    channel = [groups, ch, hw](int64_t r, int64_t j) {
      return (r % groups) * (ch / groups) + j / hw;
    };
  }
  const Tensor x = random_operand(s, t, c.layout, c.offset - 3, c.offset + 3, gen, 0.0, dev);
  const Tensor dy = random_operand(s, t, Layout::contiguous, -1, 1, gen, 0.0, dev);
  const Tensor w = affine ? random_tensor(pshape, t, -2, 2, gen).to(dev) : Tensor();
  const Tensor b = affine ? random_tensor(pshape, t, -1, 1, gen).to(dev) : Tensor();
  const double eps = 1e-5;
  ops::NormOutput got;
  if (c.kind == Kind::layer)
    got = ops::layer_norm(x, pshape, w, b, eps);
  else if (c.kind == Kind::group)
    got = ops::group_norm(x, c.k, w, b, eps);
  else
    got = ops::instance_norm(x, w, b, eps);
  const NormRef want = norm_reference(rows, len, channels, channel, x.to_vector<double>(),
                                      affine ? w.to_vector<double>() : std::vector<double>{},
                                      affine ? b.to_vector<double>() : std::vector<double>{},
                                      dy.to_vector<double>(), eps);
  // Note [Conditioning of a row]: x - mean is exact to a rounding of x's size (larger for rows far
  // from zero), and the outputs multiply it by rstd (y) or rstd^2 (dx): each element's absolute
  // tolerance scales by those of its row, so rows of tiny variance get the float32 error they
  // cannot avoid and every other row is held to the default.
  auto row_tol = [&](int power, double base_scale) {
    return [&, power, base_scale](size_t i) {
      const double r = len > 0 ? std::max(1.0, want.rstd[i / static_cast<size_t>(len)]) : 1.0;
      return scaled_tolerance(t, base_scale * std::pow(r, power));
    };
  };
  const double offset_scale = 1 + std::abs(c.offset);
  check_result_each(got.out, dev, t, s, want.y, row_tol(1, offset_scale));
  if (len > 0) {
    check_result(got.mean, dev, stat_dtype(t), {rows}, want.mean,
                 scaled_tolerance(stat_dtype(t), 1 + std::abs(c.offset)));
    check_result(got.rstd, dev, stat_dtype(t), {rows}, want.rstd, stat_tolerance(t));
  } else {
    check_result(got.mean, dev, stat_dtype(t), {rows}, std::vector<double>(rows, std::nan("")));
  }
  ops::NormWants wants{true, affine, affine};
  ops::NormGrads g;
  if (c.kind == Kind::layer)
    g = ops::layer_norm_backward(dy, x, pshape, w, got.mean, got.rstd, wants);
  else if (c.kind == Kind::group)
    g = ops::group_norm_backward(dy, x, c.k, w, got.mean, got.rstd, wants);
  else
    g = ops::instance_norm_backward(dy, x, w, got.mean, got.rstd, wants);
  check_result_each(g.grad_input, dev, t, s, want.dx, row_tol(2, offset_scale));
  if (!affine) {
    CHECK_FALSE(g.grad_weight.defined());
    return;
  }
  // The weight and bias gradients sum numel / channels terms per channel, each rounded in
  // float32 (float64 for float64) before the double sum: the absolute error grows with their
  // number.
  const double terms =
      static_cast<double>(std::max<int64_t>(numel / std::max<int64_t>(channels, 1), 1));
  const double max_rstd =
      want.rstd.empty() ? 1.0 : *std::max_element(want.rstd.begin(), want.rstd.end());
  const Tolerance st = scaled_tolerance(t, offset_scale * terms * std::max(1.0, max_rstd));
  check_result(g.grad_weight, dev, t, pshape, want.dw, st);
  check_result(g.grad_bias, dev, t, pshape, want.db, st);
}

}  // namespace

TEST_CASE(
    "layer_norm, group_norm, instance_norm and their backward ops match float64 loops on "
    "every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  const NormCase cases[] = {
      {Kind::layer, {3, 5}, 1, Layout::contiguous, 0},
      {Kind::layer, {1, 7}, 1, Layout::transposed, 0},
      {Kind::layer, {2, 3, 4}, 2, Layout::sliced, 0},
      {Kind::layer, {4, 33}, 1, Layout::contiguous, 50},
      {Kind::layer, {2, 1100}, 1, Layout::contiguous, 0},  // a block per row on a GPU
      {Kind::layer, {300, 24}, 1, Layout::transposed, 0},  // many rows for the column sums
      // 32 blocks of 7 rows: the cpu's weight gradients in a group of four rows and one of three.
      {Kind::layer, {224, 9}, 1, Layout::contiguous, 0},
      {Kind::layer, {2, 3, 2, 5, 3}, 3, Layout::contiguous, 0},
      {Kind::layer, {0, 4}, 1, Layout::contiguous, 0},
      {Kind::layer, {3, 0}, 1, Layout::contiguous, 0},
      {Kind::group, {2, 6, 3, 5}, 3, Layout::contiguous, 0},
      {Kind::group, {1, 4, 7}, 2, Layout::transposed, 10},
      {Kind::group, {3, 8}, 4, Layout::contiguous, 0},  // one element per channel
      {Kind::group, {2, 4, 40, 30}, 2, Layout::sliced, 0, true},
      {Kind::group, {2, 6, 1, 1}, 6, Layout::contiguous, 0},
      {Kind::group, {0, 4, 3}, 2, Layout::contiguous, 0},
      // Rows of odd length: the streaming stores' unaligned starts and ends.
      {Kind::group, {3, 8, 301, 291}, 4, Layout::contiguous, 0, false, true},
      {Kind::layer, {1030, 2041}, 1, Layout::contiguous, 0, false, true},
      {Kind::instance, {2, 3, 4, 5}, 0, Layout::contiguous, 0},
      {Kind::instance, {1, 2, 33}, 0, Layout::transposed, -20},
      {Kind::instance, {2, 2, 3, 3, 3}, 0, Layout::sliced, 0},
  };
  for_each_target([&](Device dev) {
    for (const NormCase& c : cases) {
      if ((c.large && !runs_large_cases(dev)) || (c.streamed && !dev.is_cpu())) continue;
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
        for (bool affine : {false, true}) {
          CAPTURE(static_cast<int>(c.kind));
          CAPTURE(c.shape);
          CAPTURE(c.layout);
          CAPTURE(t);
          CAPTURE(affine);
          check_case(c, t, affine, dev, gen);
        }
    }
  });
}

TEST_CASE("layer_norm, group_norm, instance_norm: typed errors on every target") {
  for_each_target([&](Device dev) {
    const Tensor x = zeros({2, 6, 4}, {kFloat32, dev});
    CHECK_THROWS_WITH_AS(ops::layer_norm(x, {5}, Tensor(), Tensor(), 1e-5),
                         doctest::Contains("normalized_shape=[5]"), ShapeError);
    CHECK_THROWS_AS(ops::layer_norm(x, {}, Tensor(), Tensor(), 1e-5), ValueError);
    CHECK_THROWS_WITH_AS(ops::layer_norm(x, {4}, zeros({3}, {kFloat32, dev}), Tensor(), 1e-5),
                         doctest::Contains("weight of shape [4]"), ShapeError);
    CHECK_THROWS_WITH_AS(ops::group_norm(x, 4, Tensor(), Tensor(), 1e-5),
                         doctest::Contains("divisible by num_groups"), ValueError);
    CHECK_THROWS_AS(ops::layer_norm(x, {4}, zeros({4}, {kFloat64, dev}), Tensor(), 1e-5),
                    DTypeError);
    CHECK_THROWS_AS(ops::layer_norm(zeros({2, 4}, {kInt64, dev}), {4}, Tensor(), Tensor(), 1e-5),
                    DTypeError);
    CHECK_THROWS_AS(ops::instance_norm(zeros({2, 6}, {kFloat32, dev}), Tensor(), Tensor(), 1e-5),
                    ShapeError);
  });
}

}  // namespace ember::test

// Batch norm on every target (tests/spec/spec.h) against the textbook formulas in float64 loops:
// training (batch statistics, running statistics updated with the unbiased variance, two steps)
// and eval (running statistics), with and without affine parameters, forward and backward
// (grad_input, grad_weight, grad_bias); 2-D to 5-D inputs, channels split over several GPU blocks,
// inputs offset far from zero, transposed and misaligned views; empty input and one value per
// channel. float16/bfloat16 inputs with parameters of their own dtype or float32 (autocast's
// mixed precision): the float32 batch norm of the same values, rounded once (Note [Widened half
// ops] in ops/dispatch.h), with float32 statistics.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "ops/batch_norm.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

// The textbook batch norm of x [N, C, S...] (row-major values) for one mode.
struct BnRef {
  std::vector<double> y, mean, invstd, running_mean, running_var, dx, dw, db;
};

BnRef bn_reference(const Shape& shape, const std::vector<double>& x, const std::vector<double>& w,
                   const std::vector<double>& b, const std::vector<double>& rm,
                   const std::vector<double>& rv, const std::vector<double>& dy, bool training,
                   double momentum, double eps) {
  const int64_t n = shape[0], c = shape[1], s = checked_numel(shape) / std::max<int64_t>(n * c, 1);
  const double m = static_cast<double>(n * s);
  auto at = [&](int64_t i, int64_t k, int64_t j) {
    return static_cast<size_t>((i * c + k) * s + j);
  };
  BnRef r;
  r.y.resize(x.size());
  r.dx.resize(x.size());
  r.running_mean = rm, r.running_var = rv;
  for (int64_t k = 0; k < c; ++k) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) mean += x[at(i, k, j)];
    mean /= m;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) var += (x[at(i, k, j)] - mean) * (x[at(i, k, j)] - mean);
    var /= m;  // biased: the one that normalises
    if (training) {
      r.running_mean[k] = (1 - momentum) * rm[k] + momentum * mean;
      r.running_var[k] = (1 - momentum) * rv[k] + momentum * var * m / (m - 1);
    } else {
      mean = rm[k], var = rv[k];
    }
    const double invstd = 1 / std::sqrt(var + eps), gamma = w.empty() ? 1.0 : w[k];
    r.mean.push_back(mean);
    r.invstd.push_back(invstd);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        const size_t e = at(i, k, j);
        const double xhat = (x[e] - mean) * invstd;
        r.y[e] = xhat * gamma + (b.empty() ? 0.0 : b[k]);
        sum_dy += dy[e];
        sum_dy_xhat += dy[e] * xhat;
      }
    r.db.push_back(sum_dy);
    r.dw.push_back(sum_dy_xhat);
    // d/dx of gamma * xhat + beta: in training the mean and variance depend on x too.
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) {
        const size_t e = at(i, k, j);
        const double xhat = (x[e] - mean) * invstd;
        r.dx[e] = training ? gamma * invstd * (dy[e] - sum_dy / m - xhat * sum_dy_xhat / m)
                           : gamma * invstd * dy[e];
      }
  }
  return r;
}

// The tolerance of a batch-norm result that rounds at the size `scale`: the outputs are computed
// in x's dtype as x * scale + shift, so they round at the size of |x| * invstd, and dx at that
// times invstd; `unit` is a few ulps of 1.
// A half result is float32's, rounded once: within float32's bound or 1 ulp of the half type.
Tolerance bn_tolerance(DType t, double scale) {
  if (t == kFloat64) return {1e-11, 1e-13 * scale};
  return {2e-5, 2e-6 * scale, t == kFloat32 ? 0 : 1};
}

double max_abs(const std::vector<double>& v, double floor = 1.0) {
  double m = floor;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

struct Case {
  Shape x;
  bool affine;
  Layout layout;
  double offset;  // added to x in [-1, 3]: the statistics need more than a naive sum of squares
};

}  // namespace

TEST_CASE(
    "batch_norm forward, running statistics and backward match the textbook on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  // [3, 5, 33, 35] and [2, 3, 40, 40] split each channel over several GPU blocks; 40x40 planes
  // read vectors; [1, 3, 5, 7] is the one-image batch.
  const Case cases[] = {
      {{4, 3}, true, Layout::contiguous, 0},
      {{1, 3, 5, 7}, false, Layout::transposed, 0},
      {{2, 5, 3, 4, 2}, true, Layout::contiguous, 0},
      {{3, 1, 6}, true, Layout::sliced, 0},
      {{1, 3, 7, 9}, true, Layout::contiguous, 100},
      {{2, 5, 13, 11}, false, Layout::contiguous, 100},
      {{6, 7}, true, Layout::transposed, 100},
      {{4, 3, 5}, false, Layout::sliced, 100},
      {{3, 5, 33, 35}, true, Layout::contiguous, 100},
      {{2, 3, 40, 40}, true, Layout::contiguous, 0},
      {{2, 3, 8, 12}, false, Layout::transposed, 0},
      {{2, 3, 1, 1}, false, Layout::contiguous, 0},
  };
  const double momentum = 0.1, eps = 1e-5;
  for_each_target([&](Device dev) {
    for (const Case& cs : cases) {
      // (input dtype, parameter dtype)
      for (auto [t, pt] : {std::pair{kFloat32, kFloat32},
                           {kFloat64, kFloat64},
                           {kFloat16, kFloat16},
                           {kBFloat16, kBFloat16},
                           {kFloat16, kFloat32},
                           {kBFloat16, kFloat32}}) {
        CAPTURE(cs.x);
        CAPTURE(cs.affine);
        CAPTURE(cs.layout);
        CAPTURE(t);
        CAPTURE(pt);
        const int64_t c = cs.x[1];
        const DType st = t == kFloat64 ? kFloat64 : kFloat32;  // save_mean's and save_invstd's
        const Tensor x0 =
            random_operand(cs.x, t, cs.layout, -1 + cs.offset, 3 + cs.offset, g, 0.0, dev);
        Tensor w, b;
        if (cs.affine) {
          w = random_tensor({c}, pt, 0.5, 2, g).to(dev);
          b = random_tensor({c}, pt, -1, 1, g).to(dev);
        }
        Tensor rm = random_tensor({c}, pt, -0.5, 0.5, g).to(dev);
        Tensor rv = random_tensor({c}, pt, 0.5, 2, g).to(dev);
        const std::vector<double> wv = w.defined() ? w.to_vector<double>() : std::vector<double>{};
        const std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>{};
        // Two training steps (the second on other values) and an eval step.
        for (int step = 0; step < 3; ++step) {
          const bool training = step < 2;
          CAPTURE(step);
          const Tensor x = step == 1 ? random_operand(cs.x, t, cs.layout, -2, 2, g, 0.0, dev) : x0;
          const Tensor dy = random_operand(cs.x, t, Layout::contiguous, -1, 1, g, 0.0, dev);
          const std::vector<double> xv = x.to_vector<double>();
          const BnRef want =
              bn_reference(cs.x, xv, wv, bv, rm.to_vector<double>(), rv.to_vector<double>(),
                           dy.to_vector<double>(), training, momentum, eps);
          const ops::BatchNormOutput got =
              ops::batch_norm(x, w, b, rm, rv, training, momentum, eps);
          const double invstd = max_abs(want.invstd), scale = max_abs(xv) * invstd * max_abs(wv);
          check_result(got.out, dev, t, cs.x, want.y, bn_tolerance(t, scale * 4));
          check_result(got.save_mean, dev, st, {c}, want.mean, bn_tolerance(st, 1));
          check_result(got.save_invstd, dev, st, {c}, want.invstd, bn_tolerance(st, invstd * 10));
          check_result(rm, dev, pt, {c}, want.running_mean, bn_tolerance(pt, max_abs(xv)));
          check_result(rv, dev, pt, {c}, want.running_var,
                       bn_tolerance(pt, max_abs(want.running_var)));
          for (bool all : {true, false}) {
            CAPTURE(all);
            const bool params = all && cs.affine;
            const ops::BatchNormGrads gr =
                ops::batch_norm_backward(dy, x, w, got.save_mean, got.save_invstd, training, true,
                                         params, params, got.reserve, eps);
            check_result(gr.grad_input, dev, t, cs.x, want.dx, bn_tolerance(t, scale * invstd * 4));
            if (!params) {
              CHECK_FALSE(gr.grad_weight.defined());
              continue;
            }
            const double m = static_cast<double>(x.numel() / c);
            check_result(gr.grad_weight, dev, pt, {c}, want.dw,
                         bn_tolerance(pt, m * max_abs(xv) * invstd));
            check_result(gr.grad_bias, dev, pt, {c}, want.db, bn_tolerance(pt, m));
          }
        }
      }
    }
  });
}

TEST_CASE("batch_norm on a misaligned view, empty input and one value per channel, every target") {
  std::mt19937 g(fresh_seed());
  for_each_target([&](Device dev) {
    // A contiguous view one element into its storage: no vector loads.
    const Tensor flat =
        random_operand({2 * 3 * 8 * 12 + 1}, kFloat32, Layout::contiguous, -2, 2, g, 0.0, dev);
    const Tensor xm = flat.slice(0, 1, flat.numel()).view({2, 3, 8, 12});
    const std::vector<double> xv = xm.to_vector<double>();
    const BnRef want = bn_reference(xm.shape(), xv, {}, {}, std::vector<double>(3, 0.0),
                                    std::vector<double>(3, 1.0), xv, true, 0.1, 1e-5);
    const ops::BatchNormOutput got = ops::batch_norm(xm, {}, {}, {}, {}, true, 0.1, 1e-5);
    const double invstd = max_abs(want.invstd), scale = max_abs(xv) * invstd;
    check_result(got.out, dev, kFloat32, xm.shape(), want.y, bn_tolerance(kFloat32, scale * 4));
    const ops::BatchNormGrads gr = ops::batch_norm_backward(
        xm, xm, {}, got.save_mean, got.save_invstd, true, true, false, false, got.reserve);
    check_result(gr.grad_input, dev, kFloat32, xm.shape(), want.dx,
                 bn_tolerance(kFloat32, scale * invstd * 4));

    // Empty input: the running statistics stay as they were.
    Tensor rm = zeros({3}, {kFloat32, dev}), rv = ones({3}, {kFloat32, dev});
    const Tensor e = empty({0, 3, 4, 4}, {kFloat32, dev});
    const ops::BatchNormOutput r = ops::batch_norm(e, {}, {}, rm, rv, true, 0.1, 1e-5);
    CHECK(r.out.shape() == e.shape());
    CHECK(r.save_mean.to_vector<double>() == std::vector<double>(3, 0.0));
    CHECK(rv.to_vector<double>() == std::vector<double>(3, 1.0));
    const ops::BatchNormGrads ge =
        ops::batch_norm_backward(e, e, {}, r.save_mean, r.save_invstd, true, true, false, false);
    CHECK(ge.grad_input.shape() == e.shape());

    // One value per channel: an error in training, fine in eval ((1 - 0) / sqrt(1 + eps)).
    const Tensor one = ones({1, 3, 1, 1}, {kFloat32, dev});
    CHECK_THROWS_AS(ops::batch_norm(one, {}, {}, rm, rv, true, 0.1, 1e-5), ValueError);
    check_result(ops::batch_norm(one, {}, {}, rm, rv, false, 0.1, 1e-5).out, dev, kFloat32,
                 {1, 3, 1, 1}, std::vector<double>(3, 1 / std::sqrt(1 + 1e-5)));
  });
}

}  // namespace ember::test

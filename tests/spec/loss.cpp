// Losses and their backward ops on every target (tests/spec/spec.h) against naive float64 loops:
// cross_entropy (label smoothing, ignore_index, class weights, every reduction), nll_loss and
// mse_loss, with the gradients derived by hand; class rows of 1 to 1100, [N, C, d...] with the
// class dim strided, empty and all-ignored batches, and targets out of range; float16/bfloat16
// within 1 ulp of the float64 loss of the same half inputs (float32 arithmetic, rounded once: Note
// [Widened half ops] in ops/dispatch.h).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ops/loss.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

const Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

// A classification input [N, C, S...] viewed as n x c x s, its targets [N, S...] as n x s.
struct Dims {
  int64_t n, c, s;
};
Dims dims_of(const Shape& shape) {
  const int64_t n = shape[0], c = shape[1];
  return {n, c, n * c == 0 ? 0 : checked_numel(shape) / (n * c)};
}

struct LossReference {
  std::vector<double> loss;       // per position for None, else one value
  std::vector<double> log_probs;  // cross_entropy only
  std::vector<double> grad;       // d reduce(loss) / d input, scaled by grad_out
  int64_t count = 0;
};

// Cross entropy (PyTorch >= 1.10 semantics) when logits, else nll_loss on log-probabilities x.
// With smoothing eps, per counted position i
//   loss_i = (1 - eps) * -lp_i[t_i] + eps / C * -sum_k lp_ik,
//   d loss_i / d x_ik = p_ik - (1 - eps) [k = t_i] - eps / C   (cross entropy; sum_k p_ik = 1),
//   d loss_i / d x_ik = -[k = t_i]                             (nll_loss),
// and 0 at ignored positions; Mean divides by the count, the gradient scales by grad_out g
// (one value for Mean and Sum, one per position for None). The gradient takes p from `lp`,
// the log-probabilities the backward op is given, when there are any.
LossReference class_reference(const std::vector<double>& x, const std::vector<int64_t>& tg, Dims d,
                              int64_t ignore, double eps, Reduction r, bool logits,
                              const std::vector<double>& g, std::vector<double> lp = {}) {
  LossReference out;
  std::vector<double> per(static_cast<size_t>(d.n * d.s), 0.0);
  out.log_probs.assign(x.size(), 0.0);
  out.grad.assign(x.size(), 0.0);
  auto at = [&](int64_t i, int64_t k, int64_t j) {
    return static_cast<size_t>((i * d.c + k) * d.s + j);
  };
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t j = 0; j < d.s; ++j) {
      double mx = -std::numeric_limits<double>::infinity(), z = 0;
      for (int64_t k = 0; k < d.c; ++k) mx = std::max(mx, x[at(i, k, j)]);
      for (int64_t k = 0; k < d.c; ++k) z += std::exp(x[at(i, k, j)] - mx);
      for (int64_t k = 0; k < d.c; ++k)
        out.log_probs[at(i, k, j)] = logits ? x[at(i, k, j)] - mx - std::log(z) : x[at(i, k, j)];
      const int64_t t = tg[static_cast<size_t>(i * d.s + j)];
      if (t == ignore) continue;
      double sum_lp = 0;
      for (int64_t k = 0; k < d.c; ++k) sum_lp += out.log_probs[at(i, k, j)];
      per[static_cast<size_t>(i * d.s + j)] =
          (1 - eps) * -out.log_probs[at(i, t, j)] + eps / static_cast<double>(d.c) * -sum_lp;
      ++out.count;
    }
  if (lp.empty()) lp = out.log_probs;
  double total = 0;
  for (double v : per) total += v;
  const double scale = r == Reduction::Mean ? 1.0 / static_cast<double>(out.count) : 1.0;
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t j = 0; j < d.s; ++j) {
      const size_t pos = static_cast<size_t>(i * d.s + j);
      const int64_t t = tg[pos];
      if (t == ignore) continue;
      const double gi = (r == Reduction::None ? g[pos] : g[0]) * scale;
      for (int64_t k = 0; k < d.c; ++k) {
        const double onehot = k == t ? 1.0 : 0.0;
        out.grad[at(i, k, j)] = gi * (logits ? std::exp(lp[at(i, k, j)]) - (1 - eps) * onehot -
                                                   eps / static_cast<double>(d.c)
                                             : -onehot);
      }
    }
  if (r == Reduction::None)
    out.loss = per;
  else
    out.loss = {r == Reduction::Sum ? total : total / static_cast<double>(out.count)};
  return out;
}

// The class-weighted forms (PyTorch's weight=): per counted position i with target t,
//   loss_i = (1 - eps) w_t (-lp_i[t]) + eps / C sum_k w_k (-lp_ik),
//   d loss_i / d x_ij = (1 - eps) w_t (p_ij - [j = t]) + eps / C (W p_ij - w_j), W = sum_k w_k
//   (cross entropy, from d lp_ik / d x_ij = [k = j] - p_ij), or -w_t [j = t] (nll_loss);
// Mean divides by the sum of the counted positions' w_t.
LossReference weighted_reference(const std::vector<double>& x, const std::vector<int64_t>& tg,
                                 Dims d, int64_t ignore, double eps, Reduction r, bool logits,
                                 const std::vector<double>& g, const std::vector<double>& w) {
  LossReference out;
  out.grad.assign(x.size(), 0.0);
  std::vector<double> per(static_cast<size_t>(d.n * d.s), 0.0), lp(x.size()), gi(per.size());
  auto at = [&](int64_t i, int64_t k, int64_t j) {
    return static_cast<size_t>((i * d.c + k) * d.s + j);
  };
  double divisor = 0, total_w = 0;
  for (double v : w) total_w += v;
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t j = 0; j < d.s; ++j) {
      double mx = -std::numeric_limits<double>::infinity(), z = 0;
      for (int64_t k = 0; k < d.c; ++k) mx = std::max(mx, x[at(i, k, j)]);
      for (int64_t k = 0; k < d.c; ++k) z += std::exp(x[at(i, k, j)] - mx);
      for (int64_t k = 0; k < d.c; ++k)
        lp[at(i, k, j)] = logits ? x[at(i, k, j)] - mx - std::log(z) : x[at(i, k, j)];
      const int64_t t = tg[static_cast<size_t>(i * d.s + j)];
      if (t == ignore) continue;
      double smooth = 0;
      for (int64_t k = 0; k < d.c; ++k) smooth -= w[k] * lp[at(i, k, j)];
      per[static_cast<size_t>(i * d.s + j)] =
          (1 - eps) * w[t] * -lp[at(i, t, j)] + eps / static_cast<double>(d.c) * smooth;
      divisor += w[t];
      ++out.count;
    }
  const double scale = r == Reduction::Mean ? 1.0 / divisor : 1.0;
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t j = 0; j < d.s; ++j) {
      const size_t pos = static_cast<size_t>(i * d.s + j);
      const int64_t t = tg[pos];
      if (t == ignore) continue;
      const double gp = (r == Reduction::None ? g[pos] : g[0]) * scale;
      for (int64_t k = 0; k < d.c; ++k) {
        const double p = std::exp(lp[at(i, k, j)]), onehot = k == t ? 1.0 : 0.0;
        out.grad[at(i, k, j)] =
            gp * (logits ? (1 - eps) * w[t] * (p - onehot) +
                               eps / static_cast<double>(d.c) * (total_w * p - w[k])
                         : -w[t] * onehot);
      }
    }
  double total = 0;
  for (double v : per) total += v;
  if (r == Reduction::None)
    out.loss = per;
  else
    out.loss = {r == Reduction::Sum ? total : total / divisor};
  return out;
}

// Random classes in [0, c), with ignore_index at every fifth position.
std::vector<int64_t> random_targets(int64_t count, int64_t c, int64_t ignore, std::mt19937& g) {
  std::vector<int64_t> v(static_cast<size_t>(count));
  std::uniform_int_distribution<int64_t> pick(0, c - 1);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 5 == 3 ? ignore : pick(g);
  return v;
}

Shape target_shape(Shape s) {
  s.erase(s.begin() + 1);
  return s;
}

// grad_out for a reduction: one per position for None, a scalar otherwise.
Tensor grad_out(Reduction r, const Shape& per_position, DType t, Device dev, std::mt19937& g) {
  if (r == Reduction::None) return random_tensor(per_position, t, -1, 1, g).to(dev);
  return full({}, 0.7, {t, dev});
}

const Shape kScalar{};

// check_result with the absolute tolerance scaled by `scale` (as in softmax.cpp).
struct Case {
  Shape shape;
  Layout layout;
  double range;
};

}  // namespace

TEST_CASE("cross_entropy, nll_loss and their backward ops match float64 loops on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  // [N, C] rows of 1, 3, 5, 33 and 1100 classes (the last: one block per row); [N, C, d...]
  // with the class dim strided; logits up to 80 for the 5 classes.
  const Case cases[] = {{{4, 1}, Layout::transposed, 4},       {{4, 3}, Layout::contiguous, 3},
                        {{1, 5}, Layout::transposed, 80},      {{6, 33}, Layout::transposed, 4},
                        {{6, 33}, Layout::contiguous, 4},      {{2, 1100}, Layout::transposed, 4},
                        {{2, 3, 5, 7}, Layout::transposed, 4}, {{3, 4, 2}, Layout::transposed, 3}};
  for_each_target([&](Device dev) {
    for (const Case& c : cases) {
      const Dims d = dims_of(c.shape);
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
        for (Reduction r : kReductions)
          for (double eps : {0.0, 0.2})
            for (int64_t ignore : {int64_t{-100}, int64_t{1}}) {
              CAPTURE(c.shape);
              CAPTURE(c.layout);
              CAPTURE(t);
              CAPTURE(static_cast<int>(r));
              CAPTURE(eps);
              CAPTURE(ignore);
              const Shape ts = target_shape(c.shape);
              const std::vector<int64_t> tv = random_targets(d.n * d.s, d.c, ignore, gen);
              const Tensor target = from_vector(tv, ts).to(dev);
              const Tensor x =
                  random_operand(c.shape, t, c.layout, -c.range, c.range, gen, 0.0, dev);
              const Tensor g = grad_out(r, ts, t, dev, gen);
              const ops::NllOutput got = ops::cross_entropy(x, target, ignore, r, eps);
              const LossReference want =
                  class_reference(x.to_vector<double>(), tv, d, ignore, eps, r, true,
                                  g.to_vector<double>(), got.log_probs.to_vector<double>());
              CHECK(got.count == want.count);
              const Shape loss_shape = r == Reduction::None ? ts : kScalar;
              // Note [Logit-scaled tolerance] in softmax.cpp: logits up to 80.
              const double scale = std::max(1.0, c.range / 10);
              check_result(got.loss, dev, t, loss_shape, want.loss, scaled_tolerance(t, scale));
              // A half input's log-probabilities stay float32 (Note [Widened half ops]).
              const DType lpt = t == kFloat16 || t == kBFloat16 ? kFloat32 : t;
              check_result(got.log_probs, dev, lpt, c.shape, want.log_probs,
                           scaled_tolerance(lpt, scale));
              check_result(
                  ops::cross_entropy_backward(g, got.log_probs, target, ignore, r, eps, got.count),
                  dev, t, c.shape, want.grad);
              if (eps != 0) continue;
              // nll_loss on log-probabilities of its own (any values <= 0).
              const Tensor lp = random_operand(c.shape, t, c.layout, -5, 0, gen, 0.0, dev);
              const LossReference nll = class_reference(lp.to_vector<double>(), tv, d, ignore, 0, r,
                                                        false, g.to_vector<double>());
              const ops::NllOutput got_nll = ops::nll_loss(lp, target, ignore, r);
              CHECK(got_nll.count == nll.count);
              check_result(got_nll.loss, dev, t, loss_shape, nll.loss);
              check_result(ops::nll_loss_backward(g, lp, target, ignore, r, got_nll.count), dev, t,
                           c.shape, nll.grad);
            }
    }
  });
}

TEST_CASE("cross_entropy and nll_loss with class weights match float64 loops on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  const Case cases[] = {{{5, 3}, Layout::contiguous, 3},
                        {{6, 33}, Layout::transposed, 4},
                        {{2, 1100}, Layout::contiguous, 4},
                        {{2, 3, 5, 7}, Layout::transposed, 4}};
  for_each_target([&](Device dev) {
    for (const Case& c : cases) {
      const Dims d = dims_of(c.shape);
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
        for (Reduction r : kReductions)
          for (double eps : {0.0, 0.3}) {
            CAPTURE(c.shape);
            CAPTURE(t);
            CAPTURE(static_cast<int>(r));
            CAPTURE(eps);
            const int64_t ignore = 1;
            const Shape ts = target_shape(c.shape);
            const std::vector<int64_t> tv = random_targets(d.n * d.s, d.c, ignore, gen);
            const Tensor target = from_vector(tv, ts).to(dev);
            const Tensor x = random_operand(c.shape, t, c.layout, -c.range, c.range, gen, 0.0, dev);
            const Tensor w = random_tensor({d.c}, t, 0.1, 3, gen).to(dev);
            const Tensor g = grad_out(r, ts, t, dev, gen);
            const std::vector<double> wv = w.to_vector<double>(), gv = g.to_vector<double>();
            const Shape loss_shape = r == Reduction::None ? ts : kScalar;
            const ops::NllOutput got = ops::cross_entropy(x, target, ignore, r, eps, w);
            const LossReference want =
                weighted_reference(x.to_vector<double>(), tv, d, ignore, eps, r, true, gv, wv);
            CHECK(got.count == want.count);
            // The loss sums up to C weighted log-probabilities per position.
            check_result(got.loss, dev, t, loss_shape, want.loss, scaled_tolerance(t, 4));
            check_result(ops::cross_entropy_backward(g, got.log_probs, target, ignore, r, eps,
                                                     got.divisor, w),
                         dev, t, c.shape, want.grad, scaled_tolerance(t, 4));
            if (eps != 0) continue;
            const Tensor lp = random_operand(c.shape, t, c.layout, -5, 0, gen, 0.0, dev);
            const LossReference nll =
                weighted_reference(lp.to_vector<double>(), tv, d, ignore, 0, r, false, gv, wv);
            const ops::NllOutput got_nll = ops::nll_loss(lp, target, ignore, r, w);
            check_result(got_nll.loss, dev, t, loss_shape, nll.loss, scaled_tolerance(t, 4));
            check_result(ops::nll_loss_backward(g, lp, target, ignore, r, got_nll.divisor, w), dev,
                         t, c.shape, nll.grad);
          }
    }
    // A weight that is not one per class.
    const Tensor x = zeros({2, 3}, {kFloat32, dev});
    const Tensor tg = from_vector<int64_t>({0, 2}).to(dev);
    CHECK_THROWS_WITH_AS(
        ops::cross_entropy(x, tg, -100, Reduction::Mean, 0.0, zeros({4}, {kFloat32, dev})),
        doctest::Contains("weight of shape [3]"), ShapeError);
    CHECK_THROWS_AS(ops::nll_loss(x, tg, -100, Reduction::Mean, zeros({3}, {kFloat64, dev})),
                    DTypeError);
  });
}

TEST_CASE("cross_entropy and nll_loss: empty batches and all targets ignored on every target") {
  const double nan = std::nan("");
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      CAPTURE(t);
      const Tensor x = zeros({0, 4}, {t, dev});
      const Tensor none = from_vector<int64_t>(std::vector<int64_t>{}, Shape{0}).to(dev);
      check_result(ops::cross_entropy(x, none, -100, Reduction::Mean, 0.0).loss, dev, t, {}, {nan});
      check_result(ops::cross_entropy(x, none, -100, Reduction::Sum, 0.1).loss, dev, t, {}, {0});
      check_result(ops::cross_entropy(x, none, -100, Reduction::None, 0.0).loss, dev, t, {0}, {});
      check_result(ops::nll_loss(x, none, -100, Reduction::Mean).loss, dev, t, {}, {nan});
      // Every target ignored: mean is NaN (0 / 0, as PyTorch), sum 0, the gradient 0.
      const Tensor x2 = ones({2, 3}, {t, dev});
      const Tensor ignored = from_vector<int64_t>({-100, -100}).to(dev);
      const ops::NllOutput mean = ops::cross_entropy(x2, ignored, -100, Reduction::Mean, 0.2);
      CHECK(mean.count == 0);
      check_result(mean.loss, dev, t, {}, {nan});
      check_result(ops::cross_entropy(x2, ignored, -100, Reduction::Sum, 0.2).loss, dev, t, {},
                   {0});
      check_result(ops::nll_loss(x2, ignored, -100, Reduction::Sum).loss, dev, t, {}, {0});
      const Tensor g = full({}, 1.0, {t, dev});
      check_result(
          ops::cross_entropy_backward(g, mean.log_probs, ignored, -100, Reduction::Sum, 0.2, 0),
          dev, t, {2, 3}, std::vector<double>(6, 0.0));
    }
  });
}

TEST_CASE("cross_entropy by hand on every target") {
  for_each_target([&](Device dev) {
    // Logits [0, ln 3] for class 1: p = [1/4, 3/4]; loss = -ln(3/4).
    const Tensor x = from_vector<double>({0.0, std::log(3.0)}, {1, 2}).to(dev);
    const Tensor t = from_vector<int64_t>({1}, {1}).to(dev);
    check_result(ops::cross_entropy(x, t, -100, Reduction::Mean, 0.0).loss, dev, kFloat64, {},
                 {-std::log(0.75)});
    // Smoothing 0.5: 0.5 * -ln(3/4) + 0.5 / 2 * -(ln(1/4) + ln(3/4)).
    const double want = 0.5 * -std::log(0.75) + 0.25 * -(std::log(0.25) + std::log(0.75));
    check_result(ops::cross_entropy(x, t, -100, Reduction::Mean, 0.5).loss, dev, kFloat64, {},
                 {want});
  });
}

TEST_CASE("cross_entropy and nll_loss name the op, position and class count of a bad target") {
  for_each_target([&](Device dev) {
    const Tensor x = zeros({2, 3, 2}, {kFloat32, dev});
    for (int64_t bad : {int64_t{3}, int64_t{-1}}) {
      const Tensor tg = from_vector<int64_t>({0, 1, 2, bad}, {2, 2}).to(dev);
      for (const char* op : {"cross_entropy", "nll_loss"}) {
        CAPTURE(bad);
        CAPTURE(op);
        try {
          if (std::string(op) == "cross_entropy")
            (void)ops::cross_entropy(x, tg, -100, Reduction::Mean, 0.0);
          else
            (void)ops::nll_loss(x, tg, -100, Reduction::Mean);
          FAIL_CHECK("no IndexError");
        } catch (const IndexError& e) {
          check_message(e.what(), {op, "target " + std::to_string(bad), "[1, 1]", "3 classes"});
        }
      }
    }
  });
}

TEST_CASE("mse_loss and its backward match float64 loops on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  // (shape, large): 70000 elements (many blocks) take about a second per emulator thread order
  // (Note [Large cases] in spec.h).
  const std::pair<Shape, bool> cases[] = {{{0}, false},    {{1}, false},    {{33}, false},
                                          {{1000}, false}, {{3, 5}, false}, {{5, 7}, false},
                                          {{0, 3}, false}, {{70000}, true}};
  for_each_target([&](Device dev) {
    for (const auto& [shape, large] : cases) {
      if (large && !runs_large_cases(dev)) continue;
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
        for (Reduction r : kReductions) {
          CAPTURE(shape);
          CAPTURE(t);
          CAPTURE(static_cast<int>(r));
          const Tensor x = random_operand(shape, t, Layout::transposed, -2, 2, gen, 0.0, dev);
          const Tensor y = random_operand(shape, t, Layout::sliced, -2, 2, gen, 0.0, dev);
          const Tensor g = r == Reduction::None ? random_tensor(shape, t, -1, 1, gen).to(dev)
                                                : full({}, -1.3, {t, dev});
          const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>(),
                                    gv = g.to_vector<double>();
          const double n = static_cast<double>(xv.size());
          std::vector<double> per(xv.size()), grad(xv.size());
          double total = 0;
          for (size_t i = 0; i < xv.size(); ++i) {
            total += per[i] = (xv[i] - yv[i]) * (xv[i] - yv[i]);
            // d (x - y)^2 / dx = 2 (x - y), over n for Mean.
            const double gi = r == Reduction::None  ? gv[i]
                              : r == Reduction::Sum ? gv[0]
                                                    : gv[0] / n;
            grad[i] = gi * 2 * (xv[i] - yv[i]);
          }
          const std::vector<double> want = r == Reduction::None  ? per
                                           : r == Reduction::Sum ? std::vector<double>{total}
                                                                 : std::vector<double>{total / n};
          check_result(ops::mse_loss(x, y, r), dev, t, r == Reduction::None ? shape : kScalar,
                       want);
          check_result(ops::mse_loss_backward(g, x, y, r), dev, t, shape, grad);
        }
    }
  });
}

}  // namespace ember::test

// softmax, log_softmax and their backward ops on every target (tests/spec/spec.h) against naive
// float64 loops: every dim of 1-, 2- and 3-D tensors, rows of 1 to 1500 (one warp and one block
// per row on the GPU), 0-D and empty tensors, logits of range 3 and 80, and rows with huge,
// -inf and only -inf logits.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ops/softmax.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

// Row-major indices of the line along dim d through each element: calls f(line) once per line.
template <typename F>
void for_each_line(const Shape& shape, int64_t dim, F&& f) {
  const Shape s = shape.empty() ? Shape{1} : shape;
  const int64_t nd = static_cast<int64_t>(s.size()), d = dim < 0 ? dim + nd : dim;
  int64_t inner = 1;
  for (int64_t q = d + 1; q < nd; ++q) inner *= s[q];
  const int64_t outer = checked_numel(s) / std::max<int64_t>(s[d] * inner, 1);
  if (s[d] == 0) return;
  std::vector<size_t> line(static_cast<size_t>(s[d]));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < s[d]; ++k) line[k] = static_cast<size_t>((o * s[d] + k) * inner + i);
      f(line);
    }
}

struct Softmaxes {
  std::vector<double> sm, lsm;
};

// softmax and log_softmax with the max subtracted first; an all -inf line gives NaN (-inf - -inf).
Softmaxes softmax_reference(const Shape& shape, int64_t dim, const std::vector<double>& x) {
  Softmaxes r{std::vector<double>(x.size()), std::vector<double>(x.size())};
  for_each_line(shape, dim, [&](const std::vector<size_t>& line) {
    double mx = -std::numeric_limits<double>::infinity(), z = 0;
    for (size_t j : line) mx = std::max(mx, x[j]);
    for (size_t j : line) z += std::exp(x[j] - mx);
    for (size_t j : line) {
      r.sm[j] = std::exp(x[j] - mx) / z;
      r.lsm[j] = x[j] - mx - std::log(z);
    }
  });
  return r;
}

// The backward ops as functions of what they are given (grad_out g and the forward output y):
// softmax y * (g - sum(g * y)), log_softmax g - exp(y) * sum(g), along dim.
std::vector<double> backward_reference(const Shape& shape, int64_t dim, bool log,
                                       const std::vector<double>& g, const std::vector<double>& y) {
  std::vector<double> dx(g.size());
  for_each_line(shape, dim, [&](const std::vector<size_t>& line) {
    double dot = 0, sum = 0;
    for (size_t j : line) dot += g[j] * y[j], sum += g[j];
    for (size_t j : line) dx[j] = log ? g[j] - std::exp(y[j]) * sum : y[j] * (g[j] - dot);
  });
  return dx;
}

// Note [Logit-scaled tolerance]: float32 log_softmax rounds logsumexp to float32 before it
// subtracts it from each logit, so its error is a few ulps of the logits (ulp(80) = 7.6e-6:
// up to ~1.1e-5 where the result is near 0, past close()'s 1e-5), not of its result. For logits
// of range r the absolute tolerance is close()'s times max(1, r / 10); close()'s relative
// tolerance stays. This is check_result with that absolute tolerance. float16 and bfloat16 compute
// in float32 too, so their results are within 1 ulp or within that same absolute tolerance.
struct Case {
  Shape shape;
  int64_t dim;
  bool large = false;  // Note [Large cases] in spec.h
};

}  // namespace

TEST_CASE("softmax, log_softmax and their backward ops match float64 loops on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  // Rows of 1, 3, 33, 130, 1000 (one warp per row) and 1500 (one block per row) along the last
  // dim; every dim of 3-D tensors (the strided columns); 1-D, 0-D and empty tensors.
  // 520 rows of 2 (one warp each on the emulator) take about a second per thread order.
  const Case cases[] = {{{4, 1}, 1},
                        {{5, 3}, -1},
                        {{1, 3}, 0},
                        {{3, 33}, 1},
                        {{2, 1000}, -1},
                        {{2, 1500}, 1},
                        {{3, 5, 7}, 0},
                        {{3, 5, 7}, 1},
                        {{3, 5, 7}, 2},
                        {{3, 5, 7}, -1},
                        {{4, 130, 2}, 0},
                        {{4, 130, 2}, 1},
                        {{4, 130, 2}, 2, true},
                        {{9}, 0},
                        {{6}, -1},
                        {{}, 0},
                        {{}, -1},
                        {{2, 0, 3}, 1},
                        {{2, 0, 3}, 2},
                        {{2, 0, 3}, 0}};
  for_each_target([&](Device dev) {
    for (const Case& c : cases) {
      if (c.large && !runs_large_cases(dev)) continue;
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
        for (Layout layout : {Layout::contiguous, Layout::transposed})
          for (double range : {3.0, 80.0}) {
            CAPTURE(c.shape);
            CAPTURE(c.dim);
            CAPTURE(t);
            CAPTURE(layout);
            CAPTURE(range);
            const Tensor x = random_operand(c.shape, t, layout, -range, range, gen, 0.0, dev);
            const Tensor g = random_operand(c.shape, t, layout, -1, 1, gen, 0.0, dev);
            const Softmaxes want = softmax_reference(c.shape, c.dim, x.to_vector<double>());
            const std::vector<double> gv = g.to_vector<double>();
            for (bool log : {false, true}) {
              CAPTURE(log);
              const Tensor y = log ? ops::log_softmax(x, c.dim) : ops::softmax(x, c.dim);
              // Note [Logit-scaled tolerance].
              check_result(y, dev, t, c.shape, log ? want.lsm : want.sm,
                           scaled_tolerance(t, std::max(1.0, range / 10)));
              const Tensor dx =
                  log ? ops::log_softmax_backward(g, y, c.dim) : ops::softmax_backward(g, y, c.dim);
              check_result(dx, dev, t, c.shape,
                           backward_reference(c.shape, c.dim, log, gv, y.to_vector<double>()));
            }
          }
    }
  });
}

TEST_CASE("softmax subtracts the max: huge and -inf logits on every target") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64}) {
      CAPTURE(t);
      // Rows: huge, huge negative, one -inf entry, all -inf (NaN, as PyTorch).
      const double big = as_stored(-1e30 + 1e24, t), gap = big - as_stored(-1e30, t);
      const Tensor x =
          from_vector<double>(
              {1000, 1001, 1002, -1e30, -1e30 + 1e24, -2e30, 0, -inf, 5, -inf, -inf, -inf}, {4, 3})
              .to(dev, t);
      const double z = 1 + std::exp(-1.0) + std::exp(-2.0), z5 = 1 + std::exp(-5.0);
      check_result(ops::softmax(x, 1), dev, t, {4, 3},
                   {std::exp(-2.0) / z, std::exp(-1.0) / z, 1 / z, 0, 1, 0, std::exp(-5.0) / z5, 0,
                    1 / z5, nan, nan, nan});
      check_result(
          ops::log_softmax(x, 1), dev, t, {4, 3},
          {-2 - std::log(z), -1 - std::log(z), -std::log(z), -gap, 0, as_stored(-2e30, t) - big,
           -5 - std::log1p(std::exp(-5.0)), -inf, -std::log1p(std::exp(-5.0)), nan, nan, nan});
      // Along dim 0 every column holds a huge, a huge negative and a -inf logit.
      const Softmaxes want = softmax_reference({4, 3}, 0, x.to_vector<double>());
      check_result(ops::softmax(x, 0), dev, t, {4, 3}, want.sm);
      check_result(ops::log_softmax(x, 0), dev, t, {4, 3}, want.lsm);
      check_result(ops::softmax(full({}, 3.0, {t, dev}), 0), dev, t, {}, {1.0});
      check_result(ops::log_softmax(full({}, 3.0, {t, dev}), -1), dev, t, {}, {0.0});
    }
  });
}

TEST_CASE("softmax rejects integer input and a dim out of range on every target") {
  for_each_target([&](Device dev) {
    CHECK_THROWS_AS(ops::log_softmax(zeros({2}, {kInt32, dev}), 0), DTypeError);
    CHECK_THROWS_AS(ops::softmax(zeros({2, 3}, {kFloat32, dev}), 2), IndexError);
    CHECK_THROWS_AS(ops::softmax(zeros({2, 3}, {kFloat32, dev}), -3), IndexError);
  });
}

}  // namespace ember::test

// linear (y = x w^T + b) and its backward on every target (tests/spec/spec.h) against float64
// loops: x of 1 to 3 dims, in = 1, out = 1, an empty batch, with and without bias, contiguous,
// transposed and sliced operands; grad_input = g w, grad_weight = g^T x, grad_bias = the sum of
// g over every leading dim.
#include <doctest/doctest.h>

#include "ops/linear.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

struct LinearRef {
  std::vector<double> y, dx, dw, db;
};

// x [rows, in] and w [out, in] row-major (x's leading dims flattened), g [rows, out].
LinearRef linear_reference(const std::vector<double>& x, const std::vector<double>& w,
                           const std::vector<double>& b, const std::vector<double>& g, int64_t rows,
                           int64_t in, int64_t out) {
  LinearRef r;
  r.y.assign(rows * out, 0.0);
  r.dx.assign(rows * in, 0.0);
  r.dw.assign(out * in, 0.0);
  r.db.assign(out, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : b[o];
      for (int64_t k = 0; k < in; ++k) {
        acc += x[i * in + k] * w[o * in + k];
        r.dx[i * in + k] += g[i * out + o] * w[o * in + k];
        r.dw[o * in + k] += g[i * out + o] * x[i * in + k];
      }
      r.y[i * out + o] = acc;
      r.db[o] += g[i * out + o];
    }
  return r;
}

}  // namespace

TEST_CASE("linear and its backward match float64 loops on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  struct Case {
    Shape x, w;
    bool bias;
  };
  const Case cases[] = {
      {{2, 3, 5}, {4, 5}, true}, {{7}, {3, 7}, true},        {{1, 6}, {1, 6}, false},
      {{1, 5}, {3, 5}, true},    {{0, 4}, {3, 4}, true},     {{5, 7, 1}, {2, 1}, true},
      {{9, 33}, {17, 33}, true}, {{5, 7, 3}, {2, 3}, false}, {{70, 65}, {66, 65}, true}};
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
      for (const Case& c : cases)
        for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
          CAPTURE(t);
          CAPTURE(c.x);
          CAPTURE(c.w);
          CAPTURE(l);
          const int64_t in = c.w[1], out = c.w[0], rows = checked_numel(c.x) / in;
          Shape ys = c.x;
          ys.back() = out;
          const Tensor x = random_operand(c.x, t, l, -1, 1, g, 0.0, dev);
          const Tensor w = random_operand(c.w, t, l, -1, 1, g, 0.0, dev);
          const Tensor b =
              c.bias ? random_operand({out}, t, Layout::sliced, -1, 1, g, 0.0, dev) : Tensor();
          const Tensor go = random_operand(ys, t, l, -1, 1, g, 0.0, dev);
          const LinearRef want =
              linear_reference(x.to_vector<double>(), w.to_vector<double>(),
                               c.bias ? b.to_vector<double>() : std::vector<double>{},
                               go.to_vector<double>(), rows, in, out);
          // Half types: 1 ulp, or float32's accumulation error over the k terms of a product
          // (1e-6 each) where a result is near 0.
          const bool half = t == kFloat16 || t == kBFloat16;
          auto tol = [&](int64_t k) {
            return half ? scaled_tolerance(t, static_cast<double>(std::max<int64_t>(k, 1)))
                        : default_tolerance(t);
          };
          check_result(ops::linear(x, w, b), dev, t, ys, want.y, tol(in + 1));
          const ops::LinearGrads got = ops::linear_backward(go, x, w, true, true, true);
          check_result(got.grad_input, dev, t, c.x, want.dx, tol(out));
          check_result(got.grad_weight, dev, t, c.w, want.dw, tol(rows));
          check_result(got.grad_bias, dev, t, {out}, want.db, tol(rows));
        }
  });
}

}  // namespace ember::test

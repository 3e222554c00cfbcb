// The differentiable API on every target (tests/spec/spec.h): a small graph's forward and
// backward run on the device (its backward uses the elementwise, reduction, matmul and copy
// kernels) against the gradients derived by hand and computed in float64 loops here.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

// loss = mean(clamp(exp(h / 2) * b - h, -1, 3)^2), h = x w, over x [n, k], w [k, m], b [m].
// Returns (loss, dx, dw, db) through the autograd engine.
std::vector<Tensor> run_graph(const Tensor& x0, const Tensor& w0, const Tensor& b0) {
  Tensor x = x0.clone(), w = w0.clone(), b = b0.clone();
  requires_grad_(x);
  requires_grad_(w);
  requires_grad_(b);
  const Tensor h = matmul(x, w);
  const Tensor y = clamp(sub(mul(exp(mul(h, 0.5)), b), h), -1, 3);
  const Tensor loss = mean(pow(y, 2.0));
  backward(loss);
  return {loss, grad(x), grad(w), grad(b)};
}

// The same by hand: with u = exp(h / 2) b - h and y = clamp(u, -1, 3), dloss/dy = 2 y / (n m);
// dy/du = 1 inside (-1, 3), else 0; du/dh = exp(h / 2) b / 2 - 1; du/db = exp(h / 2);
// dx = dh w^T, dw = x^T dh, db = the column sums of dloss/du * exp(h / 2).
std::vector<std::vector<double>> graph_reference(const std::vector<double>& x,
                                                 const std::vector<double>& w,
                                                 const std::vector<double>& b, int64_t n, int64_t k,
                                                 int64_t m) {
  std::vector<double> dh(n * m), dx(n * k, 0.0), dw(k * m, 0.0), db(m, 0.0);
  double loss = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double h = 0;
      for (int64_t q = 0; q < k; ++q) h += x[i * k + q] * w[q * m + j];
      const double e = std::exp(h / 2), u = e * b[j] - h, y = std::min(std::max(u, -1.0), 3.0);
      loss += y * y / static_cast<double>(n * m);
      const double du = u > -1 && u < 3 ? 2 * y / static_cast<double>(n * m) : 0.0;
      dh[i * m + j] = du * (e * b[j] / 2 - 1);
      db[j] += du * e;
    }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < m; ++j) {
        dx[i * k + q] += dh[i * m + j] * w[q * m + j];
        dw[q * m + j] += x[i * k + q] * dh[i * m + j];
      }
  return {{loss}, dx, dw, db};
}

}  // namespace

TEST_CASE(
    "autograd: forward and backward of a small graph on every target match the hand-derived "
    "gradients") {
  std::mt19937 g(fresh_seed());
  const Tensor x = random_tensor({5, 7}, kFloat64, -1, 1, g);
  const Tensor w = random_tensor({7, 3}, kFloat64, -1, 1, g);
  const Tensor b = random_tensor({3}, kFloat64, -1, 1, g);
  const auto want =
      graph_reference(x.to_vector<double>(), w.to_vector<double>(), b.to_vector<double>(), 5, 7, 3);
  const Shape shapes[] = {{}, {5, 7}, {7, 3}, {3}};
  for_each_target([&](Device dev) {
    const std::vector<Tensor> got = run_graph(x.to(dev), w.to(dev), b.to(dev));
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      REQUIRE(got[i].defined());
      check_result(got[i], dev, kFloat64, shapes[i], want[i]);
    }
  });
}

}  // namespace ember::test

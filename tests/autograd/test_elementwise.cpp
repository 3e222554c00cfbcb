// The differentiable elementwise functions beyond the arithmetic (autograd/elementwise.h): a
// tensor power and where, against loops and hand-derived gradients, and the comparisons.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_test_util.h"

using namespace ember;
using ember::test::check_values_close;
using ember::test::leaf;

TEST_CASE("pow of two tensors broadcasts, with d/da = b a^(b-1) and d/db = a^b log a") {
  const std::vector<double> av = {0.5, 1.5, 2.0, 3.0, 0.25, 1.0};  // [2, 3]
  const std::vector<double> bv = {2.0, -0.5, 1.5};                 // [3]
  Tensor a = leaf(av, {2, 3});
  Tensor b = leaf(bv, {3});
  Tensor y = pow(a, b);
  CHECK(y.shape() == Shape{2, 3});
  std::vector<double> want(6), ga(6), gb(3, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      const double x = av[i * 3 + j], p = bv[j];
      want[i * 3 + j] = std::pow(x, p);
      ga[i * 3 + j] = p * std::pow(x, p - 1);
      gb[j] += std::pow(x, p) * std::log(x);
    }
  check_values_close(y.to_vector<double>(), want);
  backward(sum(y));
  check_values_close(grad(a).to_vector<double>(), ga);
  check_values_close(grad(b).to_vector<double>(), gb);
}

TEST_CASE("where picks elementwise and routes the gradient to the side it picked") {
  Tensor c = from_vector(std::vector<bool>{true, false, false, true}, {2, 2});
  Tensor a = leaf({1, 2, 3, 4}, {2, 2});
  Tensor b = leaf({-1}, {1});  // broadcast: its gradient counts the falses
  Tensor y = where(c, a, b);
  CHECK(y.to_vector<double>() == std::vector<double>{1, -1, -1, 4});
  backward(sum(y * 3.0));
  CHECK(grad(a).to_vector<double>() == std::vector<double>{3, 0, 0, 3});
  CHECK(grad(b).to_vector<double>() == std::vector<double>{6});
  CHECK_THROWS_AS(where(from_vector(std::vector<double>{1, 0}, {2}), a, b), DTypeError);
}

TEST_CASE("comparisons give bool tensors, broadcast, and are not differentiable") {
  Tensor a = leaf({1, 2, 3}, {3});
  Tensor b = from_vector(std::vector<double>{2}, {1});
  auto bools = [](const Tensor& t) {
    CHECK(t.dtype() == kBool);
    CHECK_FALSE(t.requires_grad());
    return t.to_vector<int64_t>();
  };
  CHECK(bools(eq(a, b)) == std::vector<int64_t>{0, 1, 0});
  CHECK(bools(ne(a, b)) == std::vector<int64_t>{1, 0, 1});
  CHECK(bools(lt(a, b)) == std::vector<int64_t>{1, 0, 0});
  CHECK(bools(le(a, b)) == std::vector<int64_t>{1, 1, 0});
  CHECK(bools(gt(a, b)) == std::vector<int64_t>{0, 0, 1});
  CHECK(bools(ge(a, b)) == std::vector<int64_t>{0, 1, 1});
}

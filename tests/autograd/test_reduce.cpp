// The differentiable reductions beyond sum and mean (autograd/reduce.h): amax/amin with their
// tie-sharing gradient, var/std against two-pass loops, and argmax/argmin.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/grad_test_util.h"

using namespace ember;
using ember::test::check_values_close;
using ember::test::leaf;

namespace {

std::vector<double> random_values(size_t n, std::mt19937& g) {
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  std::vector<double> v(n);
  for (double& x : v) x = u(g);
  return v;
}


}  // namespace

TEST_CASE("amax and amin over dims match loops, with keepdim shapes") {
  std::mt19937 g(7);
  std::vector<double> v = random_values(24, g);  // [2, 3, 4]
  Tensor x = leaf(v, {2, 3, 4});
  std::vector<double> mx(3, -INFINITY), mn(3, INFINITY);  // over dims 0 and 2
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        mx[j] = std::max(mx[j], v[i * 12 + j * 4 + k]);
        mn[j] = std::min(mn[j], v[i * 12 + j * 4 + k]);
      }
  CHECK(amax(x, {0, 2}).to_vector<double>() == mx);
  CHECK(amin(x, {0, -1}).to_vector<double>() == mn);
  CHECK(amax(x, {0, 2}, true).shape() == Shape{1, 3, 1});
  CHECK(amax(x).item() == *std::max_element(v.begin(), v.end()));
  CHECK(amin(x).shape() == Shape{});
}

TEST_CASE("the gradient of amax/amin is shared evenly among tied extremes") {
  Tensor x = leaf({1, 3, 3, 2, 5, 0, 0, 4}, {2, 4});
  backward(sum(amax(x, {1})));
  CHECK(grad(x).to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0, 1, 0, 0, 0});
  zero_grad(x);
  backward(sum(amin(x, {1}) * 6.0));
  CHECK(grad(x).to_vector<double>() == std::vector<double>{6, 0, 0, 0, 0, 3, 3, 0});
  zero_grad(x);
  Tensor y = leaf({2, 2, 2}, {3});
  backward(amax(y));
  check_values_close(grad(y).to_vector<double>(), {1.0 / 3, 1.0 / 3, 1.0 / 3});
}

TEST_CASE("var and std match two-pass loops, with and without a graph") {
  std::mt19937 g(11);
  std::vector<double> v = random_values(15, g);  // [3, 5]
  Tensor x = leaf(v, {3, 5});
  for (int64_t correction : {0, 1, 2}) {
    CAPTURE(correction);
    std::vector<double> rows(3), all(1);
    for (int i = 0; i < 3; ++i) {
      double m = 0;
      for (int j = 0; j < 5; ++j) m += v[i * 5 + j] / 5;
      double ss = 0;
      for (int j = 0; j < 5; ++j) ss += (v[i * 5 + j] - m) * (v[i * 5 + j] - m);
      rows[i] = ss / static_cast<double>(5 - correction);
    }
    double m = 0, ss = 0;
    for (double e : v) m += e / 15;
    for (double e : v) ss += (e - m) * (e - m);
    all[0] = ss / static_cast<double>(15 - correction);
    check_values_close(var(x, {1}, correction).to_vector<double>(), rows);
    check_values_close(var(x, {}, correction).to_vector<double>(), all);
    std::vector<double> sd = rows;
    for (double& e : sd) e = std::sqrt(e);
    check_values_close(ember::std(x, {1}, correction).to_vector<double>(), sd);
    // Without a graph the fused op answers; it must agree with the composite.
    NoGradGuard no_grad;
    check_values_close(var(x, {1}, correction).to_vector<double>(), rows);
    check_values_close(ember::std(x, {-1}, correction, true).to_vector<double>(), sd);
  }
  CHECK(var(x, {1}, 1, true).shape() == Shape{3, 1});
  CHECK_FALSE(is_leaf(var(x)));
}

TEST_CASE("the gradient of var is 2 (x - mean) / (n - correction)") {
  Tensor x = leaf({1, 2, 4, 7}, {4});
  backward(var(x));
  // mean 3.5, n - 1 = 3.
  check_values_close(grad(x).to_vector<double>(), {-5.0 / 3, -3.0 / 3, 1.0 / 3, 7.0 / 3});
}

TEST_CASE("argmax and argmin return the first extreme's index and record nothing") {
  Tensor x = leaf({1, 5, 5, 0, -2, 3}, {2, 3});
  CHECK(argmax(x).item<int64_t>() == 1);
  CHECK(argmin(x).item<int64_t>() == 4);
  CHECK(argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(argmin(x, 0, true).shape() == Shape{1, 3});
  CHECK(argmin(x, 0, true).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1});
  CHECK(argmax(x, 1).dtype() == kInt64);
  CHECK_FALSE(argmax(x, 1).requires_grad());
}

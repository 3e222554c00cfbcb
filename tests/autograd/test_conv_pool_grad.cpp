// conv2d and pooling through gradcheck (float64 central differences) over stride, padding,
// dilation, groups, ceil_mode and adaptive sizes; and which gradients conv2d computes.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "autograd/conv2d.h"
#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_test_util.h"
#include "autograd/gradcheck.h"
#include "autograd/pool2d.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "runtime/rng.h"
#include "skip_case.h"

using namespace ember;
using ember::test::expect_gradcheck;
using ember::test::skip_case;

namespace {

Tensor leaf(const Shape& s, Generator& g) {
  Tensor t = empty(s, kFloat64);
  uniform_(t, -1.0, 1.0, &g);
  requires_grad_(t);
  return t;
}

Tensor distinct_leaf(const Shape& s, std::mt19937& g) {
  Tensor t = test::distinct_values(s, g);
  requires_grad_(t);
  return t;
}

}  // namespace

TEST_CASE("gradcheck conv2d over stride, padding, dilation and groups") {
  const uint64_t seed = std::random_device{}();
  CAPTURE(seed);
  Generator gen(seed);
  struct C {
    const char* name;
    Shape x, w;
    Conv2dOptions o;
    bool bias;
  };
  const std::vector<C> cases = {
      {"plain 3x3 with bias", {2, 3, 5, 4}, {2, 3, 3, 3}, Conv2dOptions(), true},
      {"stride 2 padding 1",
       {1, 2, 6, 5},
       {3, 2, 3, 3},
       Conv2dOptions().stride(2).padding(1),
       true},
      {"dilation 2 padding 2",
       {2, 2, 6, 6},
       {2, 2, 3, 2},
       Conv2dOptions().dilation(2).padding(2, 1),
       false},
      {"groups 2", {1, 4, 5, 5}, {4, 2, 3, 3}, Conv2dOptions().groups(2).padding(1), true},
      {"depthwise stride (2, 1)",
       {2, 3, 5, 4},
       {3, 1, 2, 3},
       Conv2dOptions().groups(3).stride(2, 1),
       true},
      {"1x1", {2, 3, 3, 4}, {2, 3, 1, 1}, Conv2dOptions(), true},
  };
  const ops::ConvKey cpu_key =
      ops::conv2d_key(ops::ConvDirection::forward, {1, 1, 1, 1}, {1, 1, 1, 1}, kFloat64, kCPU, {});
  for (const ops::ConvCandidate& a : ops::explain_conv_algos(cpu_key).candidates) {
    if (a.backend != ops::ConvBackend::cpu) continue;  // the GPU ones: tests/cuda
    const std::string& algo = a.name;
    CAPTURE(algo);
    ops::set_conv_algo(algo);
    // gradcheck runs in float64; a float32-only algorithm is checked by tests/ops/test_conv2d.
    const ops::ConvKey f64 = ops::conv2d_key(ops::ConvDirection::forward, {1, 1, 3, 3},
                                             {1, 1, 1, 1}, kFloat64, kCPU, {});
    const ops::ConvSelection sel = ops::explain_conv_algos(f64);
    if (sel.chosen != algo) {
      for (const ops::ConvCandidate& c : sel.candidates)
        if (c.name == algo) skip_case(algo + " in float64: " + c.reason);
      continue;
    }
    for (const C& c : cases) {
      CAPTURE(c.name);
      std::vector<Tensor> in{leaf(c.x, gen), leaf(c.w, gen)};
      if (c.bias) in.push_back(leaf({c.w[0]}, gen));
      const Conv2dOptions o = c.o;
      expect_gradcheck(
          [o](const std::vector<Tensor>& v) {
            return conv2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), o);
          },
          in);
    }
  }
  ops::set_conv_algo("");
}

TEST_CASE("gradcheck max_pool2d, avg_pool2d and adaptive_avg_pool2d") {
  const unsigned seed = std::random_device{}();
  CAPTURE(seed);
  std::mt19937 g(seed);
  Generator gen(seed);
  using V = const std::vector<Tensor>&;
  expect_gradcheck([](V v) { return max_pool2d(v[0], 2); }, {distinct_leaf({2, 2, 5, 4}, g)});
  expect_gradcheck([](V v) { return max_pool2d(v[0], 3, 2, 1, 1, true); },
                   {distinct_leaf({1, 2, 6, 7}, g)});
  expect_gradcheck([](V v) { return max_pool2d(v[0], 2, 1, 1, 2, false); },
                   {distinct_leaf({1, 2, 5, 5}, g)});
  expect_gradcheck([](V v) { return avg_pool2d(v[0], 2, 2, 0, true); }, {leaf({2, 2, 5, 3}, gen)});
  expect_gradcheck([](V v) { return avg_pool2d(v[0], 3, 2, 1, true, false); },
                   {leaf({1, 2, 6, 7}, gen)});
  expect_gradcheck([](V v) { return avg_pool2d(v[0], 3, 2, 1, false, true); },
                   {leaf({1, 2, 5, 6}, gen)});
  expect_gradcheck(
      [](V v) {
        return adaptive_avg_pool2d(v[0], {3, 2});
      },
      {leaf({2, 2, 7, 5}, gen)});
  expect_gradcheck(
      [](V v) {
        return adaptive_avg_pool2d(v[0], {4, 5});
      },
      {leaf({1, 1, 3, 4}, gen)});
  // A small network: conv -> max pool -> conv -> adaptive average.
  expect_gradcheck(
      [](V v) {
        Tensor h = max_pool2d(conv2d(v[0], v[1], v[2], 1, 1), 2, 2, 0, 1, true);
        return adaptive_avg_pool2d(conv2d(h, v[3], Tensor(), Conv2dOptions().groups(2)), {1, 1});
      },
      {leaf({1, 2, 5, 5}, gen), leaf({4, 2, 3, 3}, gen), leaf({4}, gen), leaf({2, 2, 2, 2}, gen)});
}

TEST_CASE("conv2d backward computes only the gradients that are needed") {
  Generator gen(7);
  Tensor x = empty({1, 2, 4, 4}, kFloat64), w = leaf({3, 2, 3, 3}, gen), b = leaf({3}, gen);
  uniform_(x, -1, 1, &gen);
  Tensor y = conv2d(x, w, b, Conv2dOptions().padding(1));
  CHECK(y.requires_grad());
  backward(sum(y));
  CHECK_FALSE(grad(x).defined());
  REQUIRE(grad(w).defined());
  REQUIRE(grad(b).defined());
  // d sum(y) / d b[k] = number of output positions = 16.
  for (double v : grad(b).to_vector<double>()) CHECK(v == doctest::Approx(16.0));
  const auto [vals, idx] = max_pool2d_with_indices(w, ops::MaxPool2dParams{});
  CHECK(vals.requires_grad());
  CHECK_FALSE(idx.requires_grad());
}

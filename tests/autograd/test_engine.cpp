// The autograd engine: accumulation, dependency counting, retain_graph, in-place detection,
// grad mode, detach, and the errors at the edges.
#include <doctest/doctest.h>

#include "autograd/engine.h"
#include "autograd/function.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "ops/elementwise.h"

using namespace ember;

namespace {
Tensor leaf(std::vector<double> v, Shape s = {}) {
  if (s.empty()) s = {static_cast<int64_t>(v.size())};
  Tensor t = from_vector(v, s);
  requires_grad_(t);
  return t;
}
}  // namespace

TEST_CASE("gradients of a small expression, checked by hand") {
  Tensor x = leaf({1.0, 2.0, 3.0});
  Tensor w = leaf({0.5, -1.0, 2.0});
  // y = sum(x * w + x^2) -> dy/dx = w + 2x, dy/dw = x
  Tensor y = sum(x * w + pow(x, 2.0));
  CHECK(y.item() == doctest::Approx(0.5 - 2 + 6 + 1 + 4 + 9));
  backward(y);
  CHECK(grad(x).to_vector<double>() == std::vector<double>{2.5, 3.0, 8.0});
  CHECK(grad(w).to_vector<double>() == std::vector<double>{1.0, 2.0, 3.0});
  CHECK(is_leaf(x));
  CHECK_FALSE(is_leaf(y));
}

TEST_CASE("gradients accumulate across backward calls and through shared subexpressions") {
  Tensor x = leaf({3.0});
  Tensor a = x * 2.0;           // used twice below: a diamond
  Tensor y = a * a + a;         // dy/dx = (2a + 1) * 2 = 26 at x = 3
  backward(y, Tensor(), /*retain_graph=*/true);
  CHECK(grad(x).item() == 26.0);
  backward(y);
  CHECK(grad(x).item() == 52.0);
  zero_grad(x);
  CHECK_FALSE(grad(x).defined());
}

TEST_CASE("a second backward without retain_graph is an error") {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = sum(x * x);
  backward(y);
  try {
    backward(y);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("second time") != std::string::npos);
  }
}

TEST_CASE("modifying a saved tensor in place makes backward an error") {
  Tensor x = leaf({1.0, 2.0});
  Tensor h = x * 3.0;
  Tensor y = sum(h * h);  // saves h
  h.fill_(0.0);
  try {
    backward(y);
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("modified in place") != std::string::npos);
    CHECK(m.find("version") != std::string::npos);
  }
}

TEST_CASE("no_grad, detach and requires_grad rules") {
  Tensor x = leaf({1.0});
  {
    NoGradGuard g;
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
  }
  CHECK((x * 2.0).requires_grad());
  Tensor d = detach(x * 2.0);
  CHECK_FALSE(d.requires_grad());
  CHECK_THROWS_AS(backward(d), ValueError);
  Tensor i = from_vector<int64_t>({1, 2});
  CHECK_THROWS_AS(requires_grad_(i), DTypeError);
  Tensor y = x * 2.0;
  CHECK_THROWS_AS(requires_grad_(y), ValueError);
}

TEST_CASE("backward of a non-scalar needs a matching gradient") {
  Tensor x = leaf({1.0, 2.0, 3.0});
  Tensor y = x * 2.0;
  CHECK_THROWS_AS(backward(y), ValueError);
  CHECK_THROWS_AS(backward(y, ones({2}, kFloat64)), ShapeError);
  CHECK_THROWS_AS(backward(y, ones({3}, kFloat32)), DTypeError);
  backward(y, from_vector<double>({1.0, 0.0, -1.0}));
  CHECK(grad(x).to_vector<double>() == std::vector<double>{2.0, 0.0, -2.0});
}

TEST_CASE("autograd::grad returns gradients without touching .grad") {
  Tensor x = leaf({2.0});
  Tensor z = leaf({5.0});
  Tensor y = x * x * x;
  std::vector<Tensor> g = grad({y}, {x});
  CHECK(g[0].item() == 12.0);
  CHECK_FALSE(grad(x).defined());
  Tensor y2 = x * 2.0;
  CHECK_THROWS_AS(grad({y2}, {x, z}), ValueError);
  Tensor y3 = x * 2.0;
  std::vector<Tensor> g2 = grad({y3}, {x, z}, {}, false, /*allow_unused=*/true);
  CHECK(g2[0].item() == 2.0);
  CHECK_FALSE(g2[1].defined());
}

TEST_CASE("broadcasting gradients sum back to the input's shape") {
  Tensor a = leaf({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = leaf({10, 20, 30}, {3});
  Tensor c = leaf({7}, {1, 1});
  backward(sum(a * b + c));
  CHECK(grad(b).to_vector<double>() == std::vector<double>{5, 7, 9});
  CHECK(grad(a).to_vector<double>() == std::vector<double>{10, 20, 30, 10, 20, 30});
  CHECK(grad(c).shape() == Shape{1, 1});
  CHECK(grad(c).item() == 6.0);
}

TEST_CASE("post-accumulate-grad hooks run once per accumulation, after it, in backward order") {
  // y = sum(w2 * (w1 * x)): the engine reaches w2's accumulator before w1's (later nodes run
  // first), and each hook sees the gradient already accumulated.
  Tensor x = from_vector<double>({1.0, 2.0});
  Tensor w1 = leaf({3.0, 4.0}), w2 = leaf({5.0, 6.0});
  std::vector<std::string> order;
  std::vector<double> seen;
  HookHandle h1 = register_post_accumulate_grad_hook(w1, [&](const Tensor& t) {
    order.push_back("w1");
    seen.push_back(grad(t).to_vector<double>()[1]);
  });
  HookHandle h2 = register_post_accumulate_grad_hook(w2, [&](const Tensor& t) {
    order.push_back("w2");
    seen.push_back(grad(t).to_vector<double>()[1]);
  });
  Tensor y = sum(w2 * (w1 * x));
  backward(y, Tensor(), /*retain_graph=*/true);
  CHECK(order == std::vector<std::string>{"w2", "w1"});
  // d/dw1[1] = w2[1] * x[1] = 12; d/dw2[1] = w1[1] * x[1] = 8.
  CHECK(seen == std::vector<double>{8.0, 12.0});
  backward(y);  // accumulates: the hooks see the sums
  CHECK(seen == std::vector<double>{8.0, 12.0, 16.0, 24.0});
  h2.remove();
  h2.remove();  // a second remove does nothing
  Tensor z = sum(w2 * (w1 * x));
  backward(z);
  CHECK(order.size() == 5);
  CHECK(order.back() == "w1");
  // grad() accumulates nothing, so no hook runs.
  Tensor u = sum(w1 * x);
  ember::grad({u}, {w1});
  CHECK(order.size() == 5);
  h1.remove();
}

TEST_CASE("post-accumulate-grad hooks are for leaves that require grad") {
  Tensor x = leaf({1.0});
  Tensor y = x * 2.0;
  CHECK_THROWS_AS(register_post_accumulate_grad_hook(y, [](const Tensor&) {}), ValueError);
  Tensor c = from_vector<double>({1.0});
  CHECK_THROWS_AS(register_post_accumulate_grad_hook(c, [](const Tensor&) {}), ValueError);
}

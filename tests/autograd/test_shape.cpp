// The differentiable shape functions (autograd/shape.h): values and views against index
// arithmetic done here, where each gradient lands, and cat/stack against loops.
#include <doctest/doctest.h>

#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"

using namespace ember;

namespace {

// 0, 1, 2, ... as a float64 leaf of shape s.
Tensor iota_leaf(const Shape& s) {
  std::vector<double> v(static_cast<size_t>(checked_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  Tensor t = from_vector(v, s);
  requires_grad_(t);
  return t;
}

std::vector<double> values(const Tensor& t) {
  return t.to_vector<double>();
}

bool shares_storage(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage();
}

}  // namespace

TEST_CASE("view, flatten, squeeze and unsqueeze keep the element order and share storage") {
  Tensor x = iota_leaf({2, 3, 4});
  const std::vector<double> order = values(x);
  Tensor v = view(x, {4, -1});
  CHECK(v.shape() == Shape{4, 6});
  Tensor f = flatten(x, 1);
  CHECK(f.shape() == Shape{2, 12});
  Tensor u = unsqueeze(x, 1);
  CHECK(u.shape() == Shape{2, 1, 3, 4});
  Tensor s = squeeze(u);
  CHECK(s.shape() == Shape{2, 3, 4});
  CHECK(squeeze(u, 1).shape() == Shape{2, 3, 4});
  CHECK(squeeze(u, 0).shape() == Shape{2, 1, 3, 4});  // size 2: nothing to remove
  for (const Tensor& t : {v, f, u, s}) {
    CHECK(values(t) == order);
    CHECK(shares_storage(t, x));
    CHECK_FALSE(is_leaf(t));
  }
  CHECK_THROWS_AS(view(transpose(x, 0, 2), {24}), ShapeError);
}

TEST_CASE("flatten copies a view whose strides cannot be merged, in the transposed order") {
  Tensor x = iota_leaf({3, 4});
  Tensor f = flatten(transpose(x, 0, 1));
  std::vector<double> expected;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i) expected.push_back(i * 4.0 + j);
  CHECK(values(f) == expected);
  CHECK_FALSE(shares_storage(f, x));
  // The gradient goes back to the element each output came from.
  std::vector<double> w(12);
  for (size_t k = 0; k < w.size(); ++k) w[k] = static_cast<double>(k);
  backward(sum(f * from_vector(w, {12})));
  std::vector<double> g(12);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i) g[static_cast<size_t>(i * 4 + j)] = j * 3.0 + i;
  CHECK(values(grad(x)) == g);
}

TEST_CASE("slice and select take the elements Python would, and their gradients land there") {
  Tensor x = iota_leaf({5, 4});
  Tensor s = slice(x, 0, 1, 5, 2);  // rows 1 and 3
  CHECK(s.shape() == Shape{2, 4});
  std::vector<double> rows;
  for (int i : {1, 3})
    for (int j = 0; j < 4; ++j) rows.push_back(i * 4.0 + j);
  CHECK(values(s) == rows);
  CHECK(slice(x, 0, -2, 100).shape() == Shape{2, 4});  // negative start, clamped end
  CHECK(slice(x, 1, 3, 1).shape() == Shape{5, 0});     // end before start: empty
  CHECK_THROWS_AS(slice(x, 0, 0, 5, 0), ValueError);

  Tensor c = select(x, 1, -1);  // the last column
  CHECK(values(c) == std::vector<double>{3, 7, 11, 15, 19});
  CHECK_THROWS_AS(select(x, 1, 4), IndexError);

  backward(sum(s) + sum(c * 10.0));
  std::vector<double> g(20, 0.0);
  for (int i : {1, 3})
    for (int j = 0; j < 4; ++j) g[static_cast<size_t>(i * 4 + j)] += 1.0;
  for (int i = 0; i < 5; ++i) g[static_cast<size_t>(i * 4 + 3)] += 10.0;
  CHECK(values(grad(x)) == g);
}

TEST_CASE("expand repeats without copying and sums the gradient back") {
  Tensor x = iota_leaf({3, 1});
  Tensor e = expand(x, {2, 3, 4});
  CHECK(e.shape() == Shape{2, 3, 4});
  CHECK(shares_storage(e, x));
  std::vector<double> expected;
  for (int a = 0; a < 2; ++a)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) expected.push_back(i);
  CHECK(values(e) == expected);
  CHECK(expand(x, {-1, 5}).shape() == Shape{3, 5});
  CHECK_THROWS_AS(expand(x, {2, 4}), ShapeError);
  backward(sum(e));
  CHECK(values(grad(x)) == std::vector<double>{8, 8, 8});
}

TEST_CASE("cat and stack join in order, promote dtypes, and split the gradient back") {
  Tensor a = iota_leaf({2, 3});
  Tensor b = from_vector(std::vector<float>{10, 11, 12, 13, 14, 15, 16, 17, 18}, {3, 3});
  requires_grad_(b);
  Tensor c = cat({a, b}, 0);
  CHECK(c.shape() == Shape{5, 3});
  CHECK(c.dtype() == kFloat64);
  CHECK(values(c) == std::vector<double>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15, 16, 17, 18});

  Tensor d = cat({a, from_vector(std::vector<double>{-1, -2}, {2, 1})}, -1);
  CHECK(values(d) == std::vector<double>{0, 1, 2, -1, 3, 4, 5, -2});

  // Weight each output row by its index: each input's gradient is its rows of those weights.
  Tensor w = from_vector(std::vector<double>{0, 1, 2, 3, 4}, {5, 1});
  backward(sum(c * w));
  CHECK(values(grad(a)) == std::vector<double>{0, 0, 0, 1, 1, 1});
  CHECK(grad(b).dtype() == kFloat32);
  CHECK(values(grad(b)) == std::vector<double>{2, 2, 2, 3, 3, 3, 4, 4, 4});

  Tensor p = iota_leaf({2, 2});
  Tensor q = iota_leaf({2, 2});
  Tensor s = stack({p, q * 10.0}, 1);
  CHECK(s.shape() == Shape{2, 2, 2});
  CHECK(values(s) == std::vector<double>{0, 1, 0, 10, 2, 3, 20, 30});
  CHECK(stack({p, q}, -1).shape() == Shape{2, 2, 2});

  CHECK_THROWS_AS(cat({}, 0), ValueError);
  CHECK_THROWS_AS(cat({a, iota_leaf({2, 4})}, 0), ShapeError);
  CHECK_THROWS_AS(cat({a, iota_leaf({6})}, 0), ShapeError);
  CHECK_THROWS_AS(stack({p, iota_leaf({4})}, 0), ShapeError);
  CHECK_THROWS_AS(stack({}, 0), ValueError);
}

TEST_CASE("no graph without grad mode or without an input that requires grad") {
  Tensor x = iota_leaf({2, 3});
  {
    NoGradGuard no_grad;
    CHECK(is_leaf(flatten(x)));
    CHECK(is_leaf(cat({x, x}, 0)));
  }
  Tensor plain = zeros({2, 3});
  CHECK_FALSE(slice(plain, 0, 0, 1).requires_grad());
  CHECK(slice(x, 0, 0, 1).requires_grad());
}

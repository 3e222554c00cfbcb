// Basic indexing (autograd/index.h): each index against the elements picked here by loops over
// the positions Python would visit, views and their offsets, the errors, and the gradient.
#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"

using namespace ember;

namespace {

// x[i, j, k] = 30 i + 6 j + k, the values of a contiguous [4, 5, 6] tensor.
Tensor iota_456() {
  std::vector<double> v(120);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  Tensor t = from_vector(v, {4, 5, 6});
  requires_grad_(t);
  return t;
}

double at(int64_t i, int64_t j, int64_t k) {
  return static_cast<double>(30 * i + 6 * j + k);
}

// The values of x[is, js, ks] for the index lists given, in row-major order.
std::vector<double> pick(const std::vector<int64_t>& is, const std::vector<int64_t>& js,
                         const std::vector<int64_t>& ks) {
  std::vector<double> out;
  for (int64_t i : is)
    for (int64_t j : js)
      for (int64_t k : ks) out.push_back(at(i, j, k));
  return out;
}

std::vector<int64_t> range(int64_t start, int64_t stop, int64_t step = 1) {
  std::vector<int64_t> r;
  for (int64_t i = start; i < stop; i += step) r.push_back(i);
  return r;
}

}  // namespace

TEST_CASE("integers, slices, new axes and an ellipsis pick what Python's indexing picks") {
  Tensor x = iota_456();
  struct Case {
    const char* what;
    std::vector<TensorIndex> index;
    Shape shape;
    std::vector<double> expected;
  };
  const std::vector<Case> cases = {
      {"x[1]", {1}, {5, 6}, pick({1}, range(0, 5), range(0, 6))},
      {"x[-1]", {-1}, {5, 6}, pick({3}, range(0, 5), range(0, 6))},
      {"x[1, 2]", {1, 2}, {6}, pick({1}, {2}, range(0, 6))},
      {"x[:, 1]", {Slice{}, 1}, {4, 6}, pick(range(0, 4), {1}, range(0, 6))},
      {"x[1:4:2, ::3]",
       {Slice{1, 4, 2}, Slice{{}, {}, 3}},
       {2, 2, 6},
       pick({1, 3}, {0, 3}, range(0, 6))},
      {"x[..., 2]", {kEllipsis, 2}, {4, 5}, pick(range(0, 4), range(0, 5), {2})},
      {"x[None, 1]", {kNewAxis, 1}, {1, 5, 6}, pick({1}, range(0, 5), range(0, 6))},
      {"x[1, None, 2:5]", {1, kNewAxis, Slice{2, 5}}, {1, 3, 6}, pick({1}, {2, 3, 4}, range(0, 6))},
      {"x[..., None]",
       {kEllipsis, kNewAxis},
       {4, 5, 6, 1},
       pick(range(0, 4), range(0, 5), range(0, 6))},
      {"x[-3:]", {Slice{-3, {}}}, {3, 5, 6}, pick({1, 2, 3}, range(0, 5), range(0, 6))},
      {"x[2, ..., 1:2]", {2, kEllipsis, Slice{1, 2}}, {5, 1}, pick({2}, range(0, 5), {1})},
      {"x[10:20]", {Slice{10, 20}}, {0, 5, 6}, {}},
      {"x[-100:2, -2]", {Slice{-100, 2}, -2}, {2, 6}, pick({0, 1}, {3}, range(0, 6))},
      {"x[()]", {}, {4, 5, 6}, pick(range(0, 4), range(0, 5), range(0, 6))},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Tensor y = index(x, c.index);
    CHECK(y.shape() == c.shape);
    CHECK(y.to_vector<double>() == c.expected);
    CHECK(y.storage() == x.storage());
  }
}

TEST_CASE("an index is a view at the offset of its first element") {
  Tensor x = iota_456();
  Tensor v = index(x, {1, Slice{{}, {}, 2}});
  CHECK(v.offset() == 30);
  CHECK(v.strides() == Shape{12, 1});
  CHECK(static_cast<char*>(v.data_ptr()) == static_cast<char*>(x.data_ptr()) + 30 * 8);
}

TEST_CASE("indexing errors name what is wrong") {
  Tensor x = iota_456();
  CHECK_THROWS_AS(index(x, {4}), IndexError);
  CHECK_THROWS_AS(index(x, {0, -6}), IndexError);
  CHECK_THROWS_AS(index(x, {0, 0, 0, 0}), IndexError);
  CHECK_THROWS_AS(index(x, {kEllipsis, 0, kEllipsis}), IndexError);
  CHECK_THROWS_AS(index(x, {Slice{{}, {}, 0}}), ValueError);
  CHECK_THROWS_AS(index(x, {Slice{{}, {}, -1}}), ValueError);
  CHECK_NOTHROW(index(x, {0, 0, 0, kNewAxis}));  // new axes do not count against the dims
}

TEST_CASE("the gradient of an index lands on the indexed elements and is zero elsewhere") {
  Tensor x = iota_456();
  Tensor y = index(x, {1, Slice{0, 5, 2}});  // [3, 6]
  std::vector<double> w(18);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 1.0 + static_cast<double>(k);
  backward(sum(y * from_vector(w, {3, 6})));
  std::vector<double> expected(120, 0.0);
  int64_t n = 0;
  for (int64_t j : {0, 2, 4})
    for (int64_t k = 0; k < 6; ++k) expected[static_cast<size_t>(30 + 6 * j + k)] = w[n++];
  CHECK(grad(x).to_vector<double>() == expected);
  CHECK(grad(x).dtype() == kFloat64);
}

// gradcheck for the indexing, sorting, scan, reordering and maths functions (autograd/index.h,
// sort.h, shape.h, math.h), on fresh random float64 inputs, and the forward values that have a
// closed form here (einsum against explicit loops).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_test_util.h"
#include "ops/op_test_util.h"

using namespace ember;
using namespace ember::test;

namespace {

Tensor random_leaf(const Shape& s, std::mt19937& g, double lo = -1, double hi = 1) {
  Tensor t = random_tensor(s, kFloat64, lo, hi, g);
  requires_grad_(t);
  return t;
}

Tensor idx(std::vector<int64_t> v, const Shape& s) {
  return from_vector(v, s);
}

}  // namespace

TEST_CASE("gradcheck: advanced indexing, index_put and masks") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Tensor x = random_leaf({4, 5, 3}, g);
  const Tensor rows = idx({1, 3, 1, -1}, {4});  // repeats: gradients add up
  expect_gradcheck([&](const auto& in) { return index(in[0], {rows}); }, {x});
  expect_gradcheck([&](const auto& in) { return index(in[0], {Slice{}, idx({0, 4}, {2}), 1}); },
                   {x});
  expect_gradcheck([&](const auto& in) { return index(in[0], {rows, Slice{}, idx({2, 0, 2, 1}, {4})}); },
                   {x});
  const Tensor mask = gt(from_vector<double>({1, -1, 2, 0, 3}, {5}), zeros({}, kFloat64));
  expect_gradcheck([&](const auto& in) { return index(in[0], {Slice{}, mask}); }, {x});
  const Tensor v = random_leaf({4, 5}, g);
  for (bool acc : {false, true}) {
    CAPTURE(acc);
    // Repeated rows: the sum (accumulate), or the last write, which alone gets a gradient.
    expect_gradcheck(
        [&](const auto& in) { return index_put(in[0], {rows, Slice{}, 2}, in[1], acc); }, {x, v});
  }
  const Tensor m3 = gt(random_tensor({4, 5, 3}, kFloat64, -1, 1, g), zeros({}, kFloat64));
  expect_gradcheck([&](const auto& in) { return masked_select(in[0], m3); }, {x});
  expect_gradcheck([&](const auto& in) { return masked_fill(in[0], m3, 2.5); }, {x});
}

TEST_CASE("gradcheck: gather, scatter, scatter_add, index_select, index_add, take_along_dim") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Tensor x = random_leaf({4, 5}, g);
  const Tensor gi = idx({0, 4, 4, 1, 2, 3, 3, 0, 1}, {3, 3});
  expect_gradcheck([&](const auto& in) { return gather(in[0], 1, gi); }, {x});
  const Tensor src = random_leaf({3, 4}, g);  // larger than the index along dim 1
  // scatter with distinct positions per row (repeats would make the result order-dependent).
  const Tensor si = idx({0, 4, 2, 1, 3, 0, 2, 1, 4}, {3, 3});
  expect_gradcheck([&](const auto& in) { return scatter(in[0], 1, si, in[1]); }, {x, src});
  expect_gradcheck([&](const auto& in) { return scatter_add(in[0], 1, gi, in[1]); }, {x, src});
  const Tensor src_same = random_leaf({3, 3}, g);  // the index's own shape
  expect_gradcheck([&](const auto& in) { return scatter(in[0], 1, si, in[1]); }, {x, src_same});
  expect_gradcheck([&](const auto& in) { return scatter_add(in[0], 1, gi, in[1]); },
                   {x, src_same});
  const Tensor sel = idx({4, 0, 4}, {3});
  expect_gradcheck([&](const auto& in) { return index_select(in[0], 1, sel); }, {x});
  const Tensor s2 = random_leaf({4, 3}, g);
  expect_gradcheck([&](const auto& in) { return index_add(in[0], 1, sel, in[1], 0.5); }, {x, s2});
  expect_gradcheck(
      [&](const auto& in) { return take_along_dim(in[0], idx({1, 0, 3, 2}, {4, 1}), 1); }, {x});
  expect_gradcheck([&](const auto& in) { return take_along_dim(in[0], idx({19, 0}, {2}), {}); },
                   {x});
}

TEST_CASE("gradcheck: embedding with repeats, padding and frequency scaling") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Tensor w = random_leaf({6, 3}, g);
  const Tensor tokens = idx({1, 4, 1, 0, 5, 1, 4, 0}, {2, 4});
  expect_gradcheck([&](const auto& in) { return embedding(tokens, in[0]); }, {w});
  // scale_grad_by_freq divides each row's gradient by its index's count (not a derivative, so no
  // gradcheck): a sum gives every row looked up a gradient of 1.
  Tensor w1 = random_leaf({6, 3}, g);
  backward(sum(embedding(tokens, w1, std::nullopt, true)));
  const std::vector<double> g1 = grad(w1).to_vector<double>();
  for (int r = 0; r < 6; ++r)
    for (int j = 0; j < 3; ++j) CHECK(g1[r * 3 + j] == (r == 2 || r == 3 ? 0.0 : 1.0));
  // The padding row gets no gradient even where it is looked up.
  Tensor w2 = random_leaf({6, 3}, g);
  backward(sum(embedding(tokens, w2, 1)));
  const std::vector<double> gw = grad(w2).to_vector<double>();
  for (int j = 0; j < 3; ++j) {
    CHECK(gw[1 * 3 + j] == 0.0);
    CHECK(gw[4 * 3 + j] == 2.0);  // index 4 occurs twice
  }
  CHECK_THROWS_AS(embedding(idx({6}, {1}), w), IndexError);
  CHECK(one_hot(idx({2, 0}, {2}), 3).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 1, 1, 0, 0});
}

TEST_CASE("gradcheck: sort, topk, kthvalue, cumsum, cumprod") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  Tensor x = distinct_values({3, 6}, g);
  requires_grad_(x);
  expect_gradcheck([&](const auto& in) { return sort(in[0], 1, true).values; }, {x});
  expect_gradcheck([&](const auto& in) { return sort(in[0], 0).values; }, {x});
  expect_gradcheck([&](const auto& in) { return topk(in[0], 2, 1).values; }, {x});
  expect_gradcheck([&](const auto& in) { return kthvalue(in[0], 3, 1).values; }, {x});
  expect_gradcheck([&](const auto& in) { return kthvalue(in[0], 2, 0, true).values; }, {x});
  const Tensor y = random_leaf({3, 5}, g, 0.5, 1.5);
  expect_gradcheck([&](const auto& in) { return cumsum(in[0], 1); }, {y});
  expect_gradcheck([&](const auto& in) { return cumsum(in[0], 0); }, {y});
  expect_gradcheck([&](const auto& in) { return cumprod(in[0], 1); }, {y});
  // With zeros: the gradient is still exact (no division).
  Tensor z = from_vector<double>({0.5, 0.0, 2.0, 1.5, 0.0, -1.0}, {6});
  requires_grad_(z);
  expect_gradcheck([&](const auto& in) { return cumprod(in[0], 0); }, {z});
}

TEST_CASE("gradcheck: flip, roll, repeat, tile, repeat_interleave, tril, triu, views") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Tensor x = random_leaf({3, 4}, g);
  expect_gradcheck([&](const auto& in) { return flip(in[0], {0, 1}); }, {x});
  expect_gradcheck([&](const auto& in) { return roll(in[0], {1, -3}, {0, 1}); }, {x});
  expect_gradcheck([&](const auto& in) { return repeat(in[0], {2, 1, 3}); }, {x});
  expect_gradcheck([&](const auto& in) { return tile(in[0], {2}); }, {x});
  expect_gradcheck([&](const auto& in) { return repeat_interleave(in[0], 2, 1); }, {x});
  expect_gradcheck(
      [&](const auto& in) { return repeat_interleave(in[0], idx({2, 0, 1}, {3}), 0); }, {x});
  expect_gradcheck([&](const auto& in) { return tril(in[0], 1); }, {x});
  expect_gradcheck([&](const auto& in) { return triu(in[0], -1); }, {x});
  expect_gradcheck([&](const auto& in) { return narrow(in[0], 1, 1, 2); }, {x});
  expect_gradcheck([&](const auto& in) { return split(in[0], 3, 1)[1]; }, {x});
  expect_gradcheck([&](const auto& in) { return chunk(in[0], 2, 0)[0]; }, {x});
  expect_gradcheck([&](const auto& in) { return unbind(in[0], 1)[2]; }, {x});
  expect_gradcheck([&](const auto& in) { return movedim(in[0], {0}, {1}); }, {x});
}

TEST_CASE("gradcheck: sin, cos, erf, fmod, remainder, lerp, logsumexp, norms") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Tensor x = random_leaf({3, 4}, g, -2, 2);
  const Tensor b = random_leaf({4}, g, 0.7, 1.3);
  expect_gradcheck([&](const auto& in) { return sin(in[0]); }, {x});
  expect_gradcheck([&](const auto& in) { return cos(in[0]); }, {x});
  expect_gradcheck([&](const auto& in) { return erf(in[0]); }, {x});
  expect_gradcheck([&](const auto& in) { return fmod(in[0], in[1]); }, {x, b});
  expect_gradcheck([&](const auto& in) { return remainder(in[0], in[1]); }, {x, b});
  const Tensor w = random_leaf({3, 4}, g, 0, 1);
  const Tensor e = random_leaf({3, 4}, g);
  expect_gradcheck([&](const auto& in) { return lerp(in[0], in[1], in[2]); }, {x, e, w});
  expect_gradcheck([&](const auto& in) { return logsumexp(in[0], {1}); }, {x});
  expect_gradcheck([&](const auto& in) { return logsumexp(in[0], {0, 1}, true); }, {x});
  for (double ord : {2.0, 1.0, 3.0, 0.5, std::numeric_limits<double>::infinity()}) {
    CAPTURE(ord);
    expect_gradcheck([&](const auto& in) { return vector_norm(in[0], ord, {1}); }, {x});
  }
  expect_gradcheck([&](const auto& in) { return vector_norm(in[0]); }, {x});
  // The 2-norm of zeros has gradient 0 (not NaN), as PyTorch.
  Tensor zero = zeros({3}, kFloat64);
  requires_grad_(zero);
  backward(vector_norm(zero));
  CHECK(grad(zero).to_vector<double>() == std::vector<double>{0, 0, 0});
  // Rounding has gradient zero.
  Tensor r = random_leaf({5}, g);
  backward(sum(add(round(r), floor(r))));
  CHECK(grad(r).to_vector<double>() == std::vector<double>(5, 0.0));
}

TEST_CASE("einsum matches explicit loops and passes gradcheck") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Tensor a = random_leaf({2, 3, 4}, g), b = random_leaf({2, 4, 5}, g);
  const Tensor c = random_leaf({3, 3}, g), v = random_leaf({4}, g);
  // bij,bjk->bik against loops.
  const Tensor out = einsum("bij,bjk->bik", {a, b});
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> want;
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k) {
        double s = 0;
        for (int j = 0; j < 4; ++j) s += av[(n * 3 + i) * 4 + j] * bv[(n * 4 + j) * 5 + k];
        want.push_back(s);
      }
  CHECK(out.shape() == Shape{2, 3, 5});
  check_values_close(out.to_vector<double>(), want);
  // The trace and the diagonal: a repeated letter.
  const std::vector<double> cv = c.to_vector<double>();
  CHECK(einsum("ii", {c}).item() == doctest::Approx(cv[0] + cv[4] + cv[8]));
  check_values_close(einsum("ii->i", {c}).to_vector<double>(), {cv[0], cv[4], cv[8]});
  // Implicit output: letters seen once, in alphabetical order.
  CHECK(einsum("bij,bjk", {a, b}).shape() == Shape{3, 5});  // b is summed: it appears twice
  CHECK(einsum("ji", {c}).shape() == Shape{3, 3});
  check_values_close(einsum("ji", {c}).to_vector<double>(), c.t().contiguous().to_vector<double>());
  // Broadcast dims.
  CHECK(einsum("...j,j->...", {a, v}).shape() == Shape{2, 3});
  expect_gradcheck([](const auto& in) { return einsum("bij,bjk->bik", in); }, {a, b});
  expect_gradcheck([](const auto& in) { return einsum("bij,j,bjk->ki", in); },
                   {a, v, b});
  expect_gradcheck([](const auto& in) { return einsum("ii->i", in); }, {c});
  expect_gradcheck([](const auto& in) { return einsum("...j,j->...", in); }, {a, v});
  expect_gradcheck([](const auto& in) { return outer(in[0], in[1]); }, {v, v});
  const Tensor m = random_leaf({3, 5}, g);
  expect_gradcheck(
      [](const auto& in) { return addmm(in[0], in[1], in[2], 0.5, 2.0); },
      {m, random_leaf({3, 4}, g), random_leaf({4, 5}, g)});
  expect_gradcheck([](const auto& in) { return baddbmm(in[0], in[1], in[2], 1.0, -1.0); },
                   {random_leaf({2, 3, 5}, g), a, b});
  CHECK_THROWS_AS(einsum("ij,jk->ik", {c}), ValueError);
  CHECK_THROWS_AS(einsum("ij,jk->ik", {c, a}), ValueError);
  CHECK_THROWS_AS(einsum("i$->i", {v}), ValueError);
}

TEST_CASE("in-place ops rebase autograd history, through views too") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  Tensor x = random_leaf({3, 4}, g);
  // y = 2x; y.mul_(x) makes y = 2x^2: dy/dx = 4x.
  {
    Tensor y = mul(x, 2.0);
    apply_inplace("mul_", y, {x}, [&](const Tensor& s) { return mul(s, x); });
    backward(sum(y));
    check_values_close(grad(x).to_vector<double>(), mul(x, 4.0).to_vector<double>());
    zero_grad(x);
  }
  // A write through a view: y = 3x; y[1] = x[0] ** 2 (through index_put_ of a view).
  {
    Tensor y = mul(x, 3.0);
    Tensor row = index(y, {1});
    Tensor v = mul(index(x, {0}), index(x, {0}));
    apply_inplace("copy_", row, {v}, [&](const Tensor&) { return v; });
    backward(sum(y));
    // Rows 0 and 2 of y give 3 each; row 0 of x also feeds row 1 of y as 2 x[0]; row 1 of x gets 0.
    const std::vector<double> xv = x.to_vector<double>();
    std::vector<double> want(12);
    for (int j = 0; j < 4; ++j) {
      want[j] = 3 + 2 * xv[j];
      want[4 + j] = 0;
      want[8 + j] = 3;
    }
    check_values_close(grad(x).to_vector<double>(), want);
    zero_grad(x);
  }
  // x[idx] = v on a buffer that needs no grad makes it need one, for v's sake.
  {
    Tensor buf = zeros({3, 4}, kFloat64);
    const Tensor v = random_leaf({2, 4}, g);
    index_put_(buf, {idx({2, 0}, {2})}, v);
    CHECK(buf.requires_grad());
    backward(sum(mul(buf, buf)));
    check_values_close(grad(v).to_vector<double>(), mul(v, 2.0).to_vector<double>());
  }
  // gradcheck through an in-place write.
  expect_gradcheck(
      [](const auto& in) {
        Tensor y = mul(in[0], 1.0);
        index_put_(y, {Slice{}, 1}, mul(in[1], in[1]), true);
        return y;
      },
      {x, random_leaf({3}, g)});
  // A leaf that requires grad, or a view of one, cannot be written in place.
  Tensor leaf_x = random_leaf({2}, g);
  CHECK_THROWS_AS(index_put_(leaf_x, {0}, ones({})), ValueError);
  Tensor view = index(leaf_x, {Slice{}});
  CHECK_THROWS_AS(apply_inplace("add_", view, {}, [](const Tensor& s) { return add(s, 1.0); }),
                  ValueError);
  // A tensor saved for backward and then overwritten is reported when the backward runs.
  Tensor p = mul(x, 1.0);
  Tensor q = mul(p, p);  // saves p
  apply_inplace("add_", p, {}, [](const Tensor& s) { return add(s, 1.0); });
  CHECK_THROWS(backward(sum(q)));
}

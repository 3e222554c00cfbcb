// Elementwise ops against naive float64 references, driven by one table of op specs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "op_test_util.h"
#include "ops/elementwise.h"

using namespace ember;
using namespace ember::test;

namespace {

struct Domain {
  double lo, hi, step = 0.0;
};

enum class Result { promoted, boolean, floating };  // dtype of the result given the inputs'

struct BinarySpec {
  const char* name;
  Tensor (*fn)(const Tensor&, const Tensor&);
  double (*ref)(double, double);
  Domain a, b;    // floating inputs
  Domain ia, ib;  // integer inputs
  bool ints, bools;
  Result result;
};

const BinarySpec kBinary[] = {
    {"add", [](const Tensor& a, const Tensor& b) { return ops::add(a, b); },
     [](double x, double y) { return x + y; }, {-10, 10}, {-10, 10}, {-20, 20}, {-20, 20}, true, true,
     Result::promoted},
    {"sub", [](const Tensor& a, const Tensor& b) { return ops::sub(a, b); },
     [](double x, double y) { return x - y; }, {-10, 10}, {-10, 10}, {-20, 20}, {-20, 20}, true,
     false, Result::promoted},
    {"mul", [](const Tensor& a, const Tensor& b) { return ops::mul(a, b); },
     [](double x, double y) { return x * y; }, {-10, 10}, {-10, 10}, {-20, 20}, {-20, 20}, true, true,
     Result::promoted},
    {"div", [](const Tensor& a, const Tensor& b) { return ops::div(a, b); },
     [](double x, double y) { return x / y; }, {-10, 10}, {0.5, 4}, {-20, 20}, {1, 9}, true, false,
     Result::floating},
    {"pow", [](const Tensor& a, const Tensor& b) { return ops::pow(a, b); },
     [](double x, double y) { return std::pow(x, y); }, {0.1, 3}, {-2, 2}, {-3, 3}, {0, 4}, true,
     false, Result::promoted},
    {"maximum", [](const Tensor& a, const Tensor& b) { return ops::maximum(a, b); },
     [](double x, double y) { return std::max(x, y); }, {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3},
     true, true, Result::promoted},
    {"minimum", [](const Tensor& a, const Tensor& b) { return ops::minimum(a, b); },
     [](double x, double y) { return std::min(x, y); }, {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3},
     true, true, Result::promoted},
    {"eq", [](const Tensor& a, const Tensor& b) { return ops::eq(a, b); },
     [](double x, double y) { return double(x == y); }, {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3},
     true, true, Result::boolean},
    {"ne", [](const Tensor& a, const Tensor& b) { return ops::ne(a, b); },
     [](double x, double y) { return double(x != y); }, {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3},
     true, true, Result::boolean},
    {"lt", [](const Tensor& a, const Tensor& b) { return ops::lt(a, b); },
     [](double x, double y) { return double(x < y); }, {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3},
     true, true, Result::boolean},
    {"le", [](const Tensor& a, const Tensor& b) { return ops::le(a, b); },
     [](double x, double y) { return double(x <= y); }, {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3},
     true, true, Result::boolean},
    {"gt", [](const Tensor& a, const Tensor& b) { return ops::gt(a, b); },
     [](double x, double y) { return double(x > y); }, {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3},
     true, true, Result::boolean},
    {"ge", [](const Tensor& a, const Tensor& b) { return ops::ge(a, b); },
     [](double x, double y) { return double(x >= y); }, {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3},
     true, true, Result::boolean},
};

struct UnarySpec {
  const char* name;
  Tensor (*fn)(const Tensor&);
  double (*ref)(double);
  Domain a, ia;  // floating / integer inputs
  bool ints;
  Result result;  // promoted = keeps the input dtype; floating = integers give float32
};

const UnarySpec kUnary[] = {
    {"neg", [](const Tensor& a) { return ops::neg(a); }, [](double x) { return -x; }, {-10, 10},
     {-20, 20}, true, Result::promoted},
    {"abs", [](const Tensor& a) { return ops::abs(a); }, [](double x) { return std::abs(x); },
     {-10, 10}, {-20, 20}, true, Result::promoted},
    {"exp", [](const Tensor& a) { return ops::exp(a); }, [](double x) { return std::exp(x); },
     {-5, 5}, {-3, 3}, true, Result::floating},
    {"log", [](const Tensor& a) { return ops::log(a); }, [](double x) { return std::log(x); },
     {0.01, 10}, {1, 10}, true, Result::floating},
    {"sqrt", [](const Tensor& a) { return ops::sqrt(a); }, [](double x) { return std::sqrt(x); },
     {0, 10}, {0, 10}, true, Result::floating},
    {"rsqrt", [](const Tensor& a) { return ops::rsqrt(a); },
     [](double x) { return 1.0 / std::sqrt(x); }, {0.01, 10}, {1, 10}, true, Result::floating},
    {"clamp", [](const Tensor& a) { return ops::clamp(a, -2.0, 3.0); },
     [](double x) { return std::min(std::max(x, -2.0), 3.0); }, {-5, 5}, {-5, 5}, true,
     Result::promoted},
};

struct BinaryCase {
  Shape a, b;
  Layout la, lb;
};

const BinaryCase kBinaryCases[] = {
    {{7, 13}, {7, 13}, Layout::contiguous, Layout::contiguous},
    {{7, 13}, {7, 13}, Layout::transposed, Layout::sliced},
    {{7, 13}, {7, 13}, Layout::sliced, Layout::expanded},
    {{7, 13}, {7, 13}, Layout::expanded, Layout::transposed},
    {{7, 1, 5}, {4, 5}, Layout::contiguous, Layout::contiguous},
    {{}, {3, 4}, Layout::contiguous, Layout::contiguous},
    {{3, 4}, {}, Layout::contiguous, Layout::contiguous},
    {{5, 3, 4}, {4}, Layout::transposed, Layout::contiguous},
    {{1, 13}, {7, 1}, Layout::contiguous, Layout::contiguous},
    {{11, 1, 7}, {1, 13, 7}, Layout::sliced, Layout::expanded},
    {{0, 3}, {1, 3}, Layout::contiguous, Layout::contiguous},
    {{2, 0, 3}, {3}, Layout::contiguous, Layout::contiguous},
    {{1, 1, 1}, {1}, Layout::contiguous, Layout::contiguous},
    {{1}, {1, 1, 1}, Layout::contiguous, Layout::contiguous},
    {{300, 257}, {300, 257}, Layout::contiguous, Layout::contiguous},  // parallel, contiguous
    {{300, 257}, {257}, Layout::transposed, Layout::contiguous},       // parallel, strided
};

const DType kAllCpuDTypes[] = {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool};

Shape ref_broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t ia = i + a.size(), ib = i + b.size();
    const int64_t sa = ia >= out.size() ? a[ia - out.size()] : 1;
    const int64_t sb = ib >= out.size() ? b[ib - out.size()] : 1;
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

bool supports(bool ints, bool bools, DType t) {
  if (t == kBool) return bools;
  return is_floating(t) || ints;
}

}  // namespace

TEST_CASE("binary elementwise ops match a float64 reference") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (const BinarySpec& op : kBinary) {
    for (DType t : kAllCpuDTypes) {
      if (!supports(op.ints, op.bools, t)) continue;
      const Domain da = is_floating(t) ? op.a : op.ia, db = is_floating(t) ? op.b : op.ib;
      for (const BinaryCase& c : kBinaryCases) {
        CAPTURE(op.name);
        CAPTURE(t);
        CAPTURE(c.a);
        CAPTURE(c.b);
        CAPTURE(layout_name(c.la));
        CAPTURE(layout_name(c.lb));
        const Tensor a = random_operand(c.a, t, c.la, da.lo, da.hi, g, da.step);
        const Tensor b = random_operand(c.b, t, c.lb, db.lo, db.hi, g, db.step);
        const Tensor out = op.fn(a, b);
        const Shape shape = ref_broadcast(c.a, c.b);
        const DType rt = op.result == Result::boolean                    ? kBool
                         : op.result == Result::floating && !is_floating(t) ? kFloat32
                                                                            : t;
        CHECK(out.shape() == shape);
        CHECK(out.dtype() == rt);
        const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
        std::vector<double> want(static_cast<size_t>(checked_numel(shape)));
        for (size_t i = 0; i < want.size(); ++i) {
          const auto idx = unravel(static_cast<int64_t>(i), shape);
          want[i] = as_stored(op.ref(va[broadcast_source(idx, c.a)], vb[broadcast_source(idx, c.b)]), rt);
        }
        check_values(out, want, rt);
      }
    }
  }
}

TEST_CASE("unary elementwise ops match a float64 reference") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const std::pair<Shape, Layout> cases[] = {
      {{7, 13}, Layout::contiguous}, {{7, 13}, Layout::transposed}, {{7, 13}, Layout::sliced},
      {{7, 13}, Layout::expanded},   {{}, Layout::contiguous},       {{0, 5}, Layout::contiguous},
      {{1, 1, 1}, Layout::contiguous}, {{3, 5, 7}, Layout::transposed},
      {{300, 257}, Layout::contiguous}, {{300, 257}, Layout::transposed}};
  for (const UnarySpec& op : kUnary) {
    for (DType t : kAllCpuDTypes) {
      if (!supports(op.ints, false, t)) continue;
      const Domain d = is_floating(t) ? op.a : op.ia;
      for (const auto& [shape, layout] : cases) {
        CAPTURE(op.name);
        CAPTURE(t);
        CAPTURE(shape);
        CAPTURE(layout_name(layout));
        const Tensor a = random_operand(shape, t, layout, d.lo, d.hi, g, d.step);
        const Tensor out = op.fn(a);
        const DType rt = op.result == Result::floating && !is_floating(t) ? kFloat32 : t;
        CHECK(out.shape() == shape);
        CHECK(out.dtype() == rt);
        std::vector<double> want = a.to_vector<double>();
        for (double& w : want) w = as_stored(op.ref(w), rt);
        check_values(out, want, rt);
      }
    }
  }
}

TEST_CASE("clamp edge cases: infinite bounds, lo > hi, integer bounds") {
  const Tensor x = from_vector<double>({-3.0, -0.5, 0.0, 2.5, 7.0});
  const double inf = std::numeric_limits<double>::infinity();
  check_values(ops::clamp(x, -1.0, inf), {-1.0, -0.5, 0.0, 2.5, 7.0}, kFloat64);
  check_values(ops::clamp(x, -inf, 1.0), {-3.0, -0.5, 0.0, 1.0, 1.0}, kFloat64);
  check_values(ops::clamp(x, 2.0, 1.0), {1.0, 1.0, 1.0, 1.0, 1.0}, kFloat64);
  const Tensor xi = from_vector<int32_t>({-3, -1, 0, 2, 7});
  const Tensor ci = ops::clamp(xi, -1.5, 2.5);  // integer bounds round inwards: [-1, 2]
  CHECK(ci.dtype() == kInt32);
  check_values(ci, {-1.0, -1.0, 0.0, 2.0, 2.0}, kInt32);
}

TEST_CASE("maximum and minimum propagate NaN") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = from_vector<double>({nan, 1.0, 2.0});
  const Tensor b = from_vector<double>({0.0, nan, 1.0});
  check_values(ops::maximum(a, b), {nan, nan, 2.0}, kFloat64);
  check_values(ops::minimum(a, b), {nan, nan, 1.0}, kFloat64);
}

TEST_CASE("where selects, broadcasts and promotes") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  struct Case {
    Shape c, a, b;
    DType ta, tb, result;
    Layout lc, la;
  };
  const Case cases[] = {
      {{7, 13}, {7, 13}, {7, 13}, kFloat32, kFloat32, kFloat32, Layout::contiguous, Layout::contiguous},
      {{7, 13}, {13}, {}, kFloat32, kInt64, kFloat32, Layout::transposed, Layout::contiguous},
      {{7, 1}, {1, 13}, {7, 13}, kInt32, kFloat64, kFloat64, Layout::sliced, Layout::expanded},
      {{5, 3, 4}, {3, 4}, {4}, kUInt8, kInt32, kInt32, Layout::expanded, Layout::transposed},
      {{0, 4}, {4}, {1}, kBool, kBool, kBool, Layout::contiguous, Layout::contiguous},
      {{300, 257}, {300, 257}, {257}, kFloat64, kFloat64, kFloat64, Layout::transposed, Layout::sliced},
  };
  for (const Case& k : cases) {
    CAPTURE(k.c);
    CAPTURE(k.a);
    CAPTURE(k.b);
    const Tensor c = random_operand(k.c, kBool, k.lc, 0, 1, g);
    const Tensor a = random_operand(k.a, k.ta, k.la, -5, 5, g);
    const Tensor b = random_tensor(k.b, k.tb, -5, 5, g);
    const Tensor out = ops::where(c, a, b);
    const Shape shape = ref_broadcast(ref_broadcast(k.c, k.a), k.b);
    CHECK(out.shape() == shape);
    CHECK(out.dtype() == k.result);
    const auto vc = c.to_vector<double>(), va = a.to_vector<double>(), vb = b.to_vector<double>();
    std::vector<double> want(static_cast<size_t>(checked_numel(shape)));
    for (size_t i = 0; i < want.size(); ++i) {
      const auto idx = unravel(static_cast<int64_t>(i), shape);
      want[i] = vc[broadcast_source(idx, k.c)] != 0.0 ? va[broadcast_source(idx, k.a)]
                                                      : vb[broadcast_source(idx, k.b)];
    }
    check_values(out, want, k.result);
  }
}

TEST_CASE("scalar overloads take the tensor's dtype category") {
  const Tensor i = from_vector<int32_t>({1, -2, 3});
  const Tensor f = from_vector<double>({0.5, 2.0, -1.5});
  const Tensor bo = from_vector<double>({1, 0, 1}).to(kBool);

  CHECK(ops::add(i, 2.0).dtype() == kInt32);
  check_values(ops::add(i, 2.0), {3, 0, 5}, kInt32);
  CHECK(ops::add(i, 0.5).dtype() == kFloat32);
  check_values(ops::add(i, 0.5), {1.5, -1.5, 3.5}, kFloat32);
  CHECK(ops::add(bo, 1.0).dtype() == kInt64);
  check_values(ops::add(bo, 1.0), {2, 1, 2}, kInt64);
  CHECK(ops::mul(f, -3.0).dtype() == kFloat64);
  check_values(ops::mul(f, -3.0), {-1.5, -6.0, 4.5}, kFloat64);
  check_values(ops::pow(f, 2.0), {0.25, 4.0, 2.25}, kFloat64);
  check_values(ops::pow(i, 2.0), {1, 4, 9}, kInt32);
}

TEST_CASE("type promotion: result dtype of every pair of cpu dtypes") {
  // PyTorch's torch.promote_types, written out by hand.
  const DType f32 = kFloat32, f64 = kFloat64, i32 = kInt32, i64 = kInt64, u8 = kUInt8, b8 = kBool;
  const DType order[] = {f32, f64, i32, i64, u8, b8};
  const DType table[6][6] = {
      /* f32 */ {f32, f64, f32, f32, f32, f32},
      /* f64 */ {f64, f64, f64, f64, f64, f64},
      /* i32 */ {f32, f64, i32, i64, i32, i32},
      /* i64 */ {f32, f64, i64, i64, i64, i64},
      /* u8  */ {f32, f64, i32, i64, u8, u8},
      /* b8  */ {f32, f64, i32, i64, u8, b8},
  };
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 6; ++c) {
      const DType ta = order[r], tb = order[c], want = table[r][c];
      CAPTURE(ta);
      CAPTURE(tb);
      const Tensor a = random_tensor({3, 5}, ta, 0, 9, g);
      const Tensor b = random_tensor({5}, tb, 0, 9, g);
      const Tensor s = ops::add(a, b);
      CHECK(s.dtype() == want);
      CHECK(ops::mul(a, b).dtype() == want);
      CHECK(ops::maximum(a, b).dtype() == want);
      CHECK(ops::where(ops::gt(a, b), a, b).dtype() == want);
      CHECK(ops::eq(a, b).dtype() == kBool);
      CHECK(ops::div(a, b).dtype() == (is_floating(want) ? want : kFloat32));
      if (want != kBool) CHECK(ops::sub(a, b).dtype() == want);
      // Values too: the sum computed in double, stored in the promoted dtype.
      const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
      std::vector<double> expect(15);
      for (int k = 0; k < 15; ++k) expect[k] = as_stored(va[k] + vb[k % 5], want);
      check_values(s, expect, want);
    }
  }
}

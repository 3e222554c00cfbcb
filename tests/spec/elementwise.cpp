// Elementwise ops on every target (tests/spec/spec.h) against naive float64 references: every
// binary op and comparison over broadcasts and layouts, unary ops, scalar forms, clamp, where,
// NaN propagation and type promotion, in every dtype (a dtype the target's kernels lack must
// raise DTypeError). float16 and bfloat16 results are within 1 ulp of the float64 op on the same
// half inputs, rounded.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ops/elementwise.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

struct Domain {
  double lo, hi, step = 0.0;
};

enum class Result { promoted, boolean, floating };  // dtype of the result given the inputs'

// Python's %: the remainder of floored division, with the divisor's sign.
double python_mod(double x, double y) {
  const double r = std::fmod(x, y);
  return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

struct BinarySpec {
  const char* name;
  Tensor (*fn)(const Tensor&, const Tensor&);
  double (*ref)(double, double);
  Domain a, b;    // floating inputs
  Domain ia, ib;  // integer inputs
  bool ints, bools;
  Result result;
};

// A table reads best one op to a few lines.
// clang-format off
const BinarySpec kBinary[] = {
    {"add", [](const Tensor& a, const Tensor& b) { return ops::add(a, b); },
     [](double x, double y) { return x + y; },
     {-10, 10}, {-10, 10}, {-20, 20}, {-20, 20}, true, true, Result::promoted},
    {"sub", [](const Tensor& a, const Tensor& b) { return ops::sub(a, b); },
     [](double x, double y) { return x - y; },
     {-10, 10}, {-10, 10}, {-20, 20}, {-20, 20}, true, false, Result::promoted},
    {"mul", [](const Tensor& a, const Tensor& b) { return ops::mul(a, b); },
     [](double x, double y) { return x * y; },
     {-10, 10}, {-10, 10}, {-20, 20}, {-20, 20}, true, true, Result::promoted},
    {"div", [](const Tensor& a, const Tensor& b) { return ops::div(a, b); },
     [](double x, double y) { return x / y; },
     {-10, 10}, {0.5, 4}, {-20, 20}, {1, 9}, true, false, Result::floating},
    {"pow", [](const Tensor& a, const Tensor& b) { return ops::pow(a, b); },
     [](double x, double y) { return std::pow(x, y); },
     {0.1, 3}, {-2, 2}, {-3, 3}, {0, 4}, true, false, Result::promoted},
    {"maximum", [](const Tensor& a, const Tensor& b) { return ops::maximum(a, b); },
     [](double x, double y) { return std::max(x, y); },
     {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3}, true, true, Result::promoted},
    {"minimum", [](const Tensor& a, const Tensor& b) { return ops::minimum(a, b); },
     [](double x, double y) { return std::min(x, y); },
     {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3}, true, true, Result::promoted},
    {"fmod", [](const Tensor& a, const Tensor& b) { return ops::fmod(a, b); },
     [](double x, double y) { return std::fmod(x, y); },
     {-10, 10}, {0.5, 4}, {-20, 20}, {1, 9}, true, false, Result::promoted},
    {"fmod by negatives", [](const Tensor& a, const Tensor& b) { return ops::fmod(a, b); },
     [](double x, double y) { return std::fmod(x, y); },
     {-10, 10}, {-4, -0.5}, {-20, 20}, {-9, -1}, true, false, Result::promoted},
    {"remainder", [](const Tensor& a, const Tensor& b) { return ops::remainder(a, b); },
     [](double x, double y) { return python_mod(x, y); },
     {-10, 10}, {0.5, 4}, {-20, 20}, {1, 9}, true, false, Result::promoted},
    {"remainder by negatives", [](const Tensor& a, const Tensor& b) { return ops::remainder(a, b); },
     [](double x, double y) { return python_mod(x, y); },
     {-10, 10}, {-4, -0.5}, {-20, 20}, {-9, -1}, true, false, Result::promoted},
    {"eq", [](const Tensor& a, const Tensor& b) { return ops::eq(a, b); },
     [](double x, double y) { return double(x == y); },
     {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3}, true, true, Result::boolean},
    {"ne", [](const Tensor& a, const Tensor& b) { return ops::ne(a, b); },
     [](double x, double y) { return double(x != y); },
     {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3}, true, true, Result::boolean},
    {"lt", [](const Tensor& a, const Tensor& b) { return ops::lt(a, b); },
     [](double x, double y) { return double(x < y); },
     {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3}, true, true, Result::boolean},
    {"le", [](const Tensor& a, const Tensor& b) { return ops::le(a, b); },
     [](double x, double y) { return double(x <= y); },
     {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3}, true, true, Result::boolean},
    {"gt", [](const Tensor& a, const Tensor& b) { return ops::gt(a, b); },
     [](double x, double y) { return double(x > y); },
     {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3}, true, true, Result::boolean},
    {"ge", [](const Tensor& a, const Tensor& b) { return ops::ge(a, b); },
     [](double x, double y) { return double(x >= y); },
     {-2, 2, 0.5}, {-2, 2, 0.5}, {-3, 3}, {-3, 3}, true, true, Result::boolean},
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
    {"neg", [](const Tensor& a) { return ops::neg(a); },
     [](double x) { return -x; },
     {-10, 10}, {-20, 20}, true, Result::promoted},
    {"abs", [](const Tensor& a) { return ops::abs(a); },
     [](double x) { return std::abs(x); },
     {-10, 10}, {-20, 20}, true, Result::promoted},
    {"exp", [](const Tensor& a) { return ops::exp(a); },
     [](double x) { return std::exp(x); },
     {-5, 5}, {-3, 3}, true, Result::floating},
    {"log", [](const Tensor& a) { return ops::log(a); },
     [](double x) { return std::log(x); },
     {0.01, 10}, {1, 10}, true, Result::floating},
    {"log of negatives (NaN)", [](const Tensor& a) { return ops::log(a); },
     [](double x) { return std::log(x); },
     {-3, -0.01}, {-9, -1}, true, Result::floating},
    {"sqrt", [](const Tensor& a) { return ops::sqrt(a); },
     [](double x) { return std::sqrt(x); },
     {-2, 10}, {-3, 10}, true, Result::floating},
    {"rsqrt", [](const Tensor& a) { return ops::rsqrt(a); },
     [](double x) { return 1.0 / std::sqrt(x); },
     {0.01, 10}, {1, 10}, true, Result::floating},
    {"sign", [](const Tensor& a) { return ops::sign(a); },
     [](double x) { return double((0.0 < x) - (x < 0.0)); },
     {-2, 2, 0.5}, {-3, 3}, true, Result::promoted},
    {"floor", [](const Tensor& a) { return ops::floor(a); },
     [](double x) { return std::floor(x); },
     {-5, 5}, {-9, 9}, true, Result::promoted},
    {"ceil", [](const Tensor& a) { return ops::ceil(a); },
     [](double x) { return std::ceil(x); },
     {-5, 5}, {-9, 9}, true, Result::promoted},
    {"round (ties to even)", [](const Tensor& a) { return ops::round(a); },
     [](double x) { return std::nearbyint(x); },
     {-5, 5, 0.25}, {-9, 9}, true, Result::promoted},
    {"trunc", [](const Tensor& a) { return ops::trunc(a); },
     [](double x) { return std::trunc(x); },
     {-5, 5}, {-9, 9}, true, Result::promoted},
    {"sin", [](const Tensor& a) { return ops::sin(a); },
     [](double x) { return std::sin(x); },
     {-6, 6}, {-6, 6}, true, Result::floating},
    {"cos", [](const Tensor& a) { return ops::cos(a); },
     [](double x) { return std::cos(x); },
     {-6, 6}, {-6, 6}, true, Result::floating},
    {"erf", [](const Tensor& a) { return ops::erf(a); },
     [](double x) { return std::erf(x); },
     {-3, 3}, {-3, 3}, true, Result::floating},
    {"clamp", [](const Tensor& a) { return ops::clamp(a, -2.0, 3.0); },
     [](double x) { return std::min(std::max(x, -2.0), 3.0); },
     {-5, 5}, {-5, 5}, true, Result::promoted},
    {"clamp with lo > hi", [](const Tensor& a) { return ops::clamp(a, 2.0, 0.5); },
     [](double) { return 0.5; },
     {-5, 5}, {-5, 5}, false, Result::promoted},
    {"add scalar", [](const Tensor& a) { return ops::add(a, 1.5); },
     [](double x) { return x + 1.5; },
     {-5, 5}, {-5, 5}, false, Result::promoted},
    {"mul scalar", [](const Tensor& a) { return ops::mul(a, -3.0); },
     [](double x) { return x * -3.0; },
     {-5, 5}, {-5, 5}, true, Result::promoted},
    {"pow scalar", [](const Tensor& a) { return ops::pow(a, 2.5); },
     [](double x) { return std::pow(x, 2.5); },
     {0, 3}, {0, 3}, false, Result::promoted},
};
// clang-format on

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
    {{1031}, {1031}, Layout::contiguous, Layout::contiguous},          // the vector path's tail
    {{2, 3, 4, 5}, {3, 1, 5}, Layout::sliced, Layout::contiguous},
};

const DType kAllDTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};

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

// The dtype of an op's result given its inputs' dtype t.
DType result_of(Result r, DType t) {
  if (r == Result::boolean) return kBool;
  return r == Result::floating && !is_floating(t) ? kFloat32 : t;
}

// The dtype an op computes in, which the target's kernels must implement: integer inputs to an
// op with a floating result are converted to float32 first; comparisons compute in t.
DType compute_of(Result r, DType t) {
  return r == Result::floating ? result_of(r, t) : t;
}

}  // namespace

TEST_CASE("binary elementwise ops match a float64 reference on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (const BinarySpec& op : kBinary) {
      for (DType t : kAllDTypes) {
        if (!supports(op.ints, op.bools, t)) continue;
        const Domain da = is_floating(t) ? op.a : op.ia, db = is_floating(t) ? op.b : op.ib;
        if (t == kUInt8 && db.hi < 0) continue;  // no negative uint8 divisors
        for (const BinaryCase& c : kBinaryCases) {
          const std::string name = op.name;
          CAPTURE(name);
          CAPTURE(t);
          CAPTURE(c.a);
          CAPTURE(c.b);
          CAPTURE(c.la);
          CAPTURE(c.lb);
          const Tensor a = random_operand(c.a, t, c.la, da.lo, da.hi, g, da.step, dev);
          const Tensor b = random_operand(c.b, t, c.lb, db.lo, db.hi, g, db.step, dev);
          if (!implements(dev, compute_of(op.result, t))) {
            CHECK_THROWS_AS(op.fn(a, b), DTypeError);
            break;
          }
          const Tensor out = op.fn(a, b);
          const Shape shape = ref_broadcast(c.a, c.b);
          const DType rt = result_of(op.result, t);
          const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
          std::vector<double> want(static_cast<size_t>(checked_numel(shape)));
          for (size_t i = 0; i < want.size(); ++i) {
            const auto idx = unravel(static_cast<int64_t>(i), shape);
            want[i] = as_stored(
                op.ref(va[broadcast_source(idx, c.a)], vb[broadcast_source(idx, c.b)]), rt);
          }
          check_result(out, dev, rt, shape, want);
        }
      }
    }
  });
}

TEST_CASE("unary elementwise ops and scalar forms match a float64 reference on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const std::pair<Shape, Layout> cases[] = {
      {{7, 13}, Layout::contiguous},   {{7, 13}, Layout::transposed},
      {{7, 13}, Layout::sliced},       {{7, 13}, Layout::expanded},
      {{}, Layout::contiguous},        {{0, 5}, Layout::contiguous},
      {{1, 1, 1}, Layout::contiguous}, {{3, 5, 7}, Layout::transposed},
      {{1030}, Layout::contiguous},    {{300, 257}, Layout::contiguous},
      {{300, 257}, Layout::transposed}};
  for_each_target([&](Device dev) {
    for (const UnarySpec& op : kUnary) {
      for (DType t : kAllDTypes) {
        if (!supports(op.ints, false, t)) continue;
        const Domain d = is_floating(t) ? op.a : op.ia;
        for (const auto& [shape, layout] : cases) {
          const std::string name = op.name;
          CAPTURE(name);
          CAPTURE(t);
          CAPTURE(shape);
          CAPTURE(layout);
          const Tensor a = random_operand(shape, t, layout, d.lo, d.hi, g, d.step, dev);
          if (!implements(dev, compute_of(op.result, t))) {
            CHECK_THROWS_AS(op.fn(a), DTypeError);
            break;
          }
          const DType rt = result_of(op.result, t);
          std::vector<double> want = a.to_vector<double>();
          for (double& w : want) w = as_stored(op.ref(w), rt);
          check_result(op.fn(a), dev, rt, shape, want);
        }
      }
    }
  });
}

TEST_CASE("clamp edge cases: infinite bounds, lo > hi, integer bounds, NaN") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for_each_target([&](Device dev) {
    const Tensor x = from_vector<double>({-3.0, -0.5, 0.0, 2.5, 7.0, nan}).to(dev);
    check_result(ops::clamp(x, -1.0, inf), dev, kFloat64, {6}, {-1.0, -0.5, 0.0, 2.5, 7.0, nan});
    check_result(ops::clamp(x, -inf, 1.0), dev, kFloat64, {6}, {-3.0, -0.5, 0.0, 1.0, 1.0, nan});
    check_result(ops::clamp(x, 2.0, 1.0), dev, kFloat64, {6}, {1.0, 1.0, 1.0, 1.0, 1.0, nan});
    for (DType t : {kInt32, kInt64}) {
      const Tensor xi = from_vector<double>({-3, -1, 0, 2, 7}).to(dev, t);
      // Integer bounds round inwards: [-1.5, 2.5] is [-1, 2]; bounds past the range saturate.
      check_result(ops::clamp(xi, -1.5, 2.5), dev, t, {5}, {-1.0, -1.0, 0.0, 2.0, 2.0});
      check_result(ops::clamp(xi, -1e30, 1e30), dev, t, {5}, {-3, -1, 0, 2, 7});
    }
  });
}

TEST_CASE("maximum and minimum propagate NaN on every target") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      const Tensor a = from_vector<double>({nan, 1.0, 2.0, nan}).to(dev, t);
      const Tensor b = from_vector<double>({0.0, nan, 1.0, nan}).to(dev, t);
      check_result(ops::maximum(a, b), dev, t, {4}, {nan, nan, 2.0, nan});
      check_result(ops::minimum(a, b), dev, t, {4}, {nan, nan, 1.0, nan});
    }
  });
}

TEST_CASE("where selects, broadcasts and promotes on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  struct Case {
    Shape c, a, b;
    DType ta, tb, result;
    Layout lc, la;
  };
  const Case cases[] = {
      {{7, 13},
       {7, 13},
       {7, 13},
       kFloat32,
       kFloat32,
       kFloat32,
       Layout::contiguous,
       Layout::contiguous},
      {{7, 13}, {13}, {}, kFloat32, kInt64, kFloat32, Layout::transposed, Layout::contiguous},
      {{7, 1}, {1, 13}, {7, 13}, kInt32, kFloat64, kFloat64, Layout::sliced, Layout::expanded},
      {{4, 6}, {4, 6}, {6}, kFloat32, kFloat64, kFloat64, Layout::contiguous, Layout::transposed},
      {{4, 6}, {4, 6}, {1}, kInt64, kInt64, kInt64, Layout::expanded, Layout::sliced},
      {{5, 3, 4}, {3, 4}, {4}, kUInt8, kInt32, kInt32, Layout::expanded, Layout::transposed},
      {{7, 13}, {13}, {7, 1}, kFloat16, kFloat16, kFloat16, Layout::transposed, Layout::sliced},
      {{4, 6}, {4, 6}, {6}, kBFloat16, kFloat16, kFloat32, Layout::contiguous, Layout::expanded},
      {{4, 6}, {4, 6}, {}, kBFloat16, kInt64, kBFloat16, Layout::sliced, Layout::contiguous},
      {{0, 4}, {4}, {1}, kBool, kBool, kBool, Layout::contiguous, Layout::contiguous},
      {{300, 257},
       {300, 257},
       {257},
       kFloat64,
       kFloat64,
       kFloat64,
       Layout::transposed,
       Layout::sliced},
  };
  for_each_target([&](Device dev) {
    for (const Case& k : cases) {
      CAPTURE(k.c);
      CAPTURE(k.a);
      CAPTURE(k.b);
      const Tensor c = random_operand(k.c, kBool, k.lc, 0, 1, g, 0.0, dev);
      const Tensor a = random_operand(k.a, k.ta, k.la, -5, 5, g, 0.0, dev);
      const Tensor b = random_tensor(k.b, k.tb, -5, 5, g).to(dev);
      if (!implements(dev, k.result)) {
        CHECK_THROWS_AS(ops::where(c, a, b), DTypeError);
        continue;
      }
      const Shape shape = ref_broadcast(ref_broadcast(k.c, k.a), k.b);
      const auto vc = c.to_vector<double>(), va = a.to_vector<double>(), vb = b.to_vector<double>();
      std::vector<double> want(static_cast<size_t>(checked_numel(shape)));
      for (size_t i = 0; i < want.size(); ++i) {
        const auto idx = unravel(static_cast<int64_t>(i), shape);
        want[i] = vc[broadcast_source(idx, k.c)] != 0.0 ? va[broadcast_source(idx, k.a)]
                                                        : vb[broadcast_source(idx, k.b)];
      }
      check_result(ops::where(c, a, b), dev, k.result, shape, want);
    }
  });
}

TEST_CASE("scalar overloads take the tensor's dtype category on every target") {
  for_each_target([&](Device dev) {
    const Tensor i = from_vector<int32_t>({1, -2, 3}).to(dev);
    const Tensor f = from_vector<double>({0.5, 2.0, -1.5}).to(dev);
    check_result(ops::add(i, 2.0), dev, kInt32, {3}, {3, 0, 5});
    check_result(ops::add(i, 0.5), dev, kFloat32, {3}, {1.5, -1.5, 3.5});
    check_result(ops::mul(f, -3.0), dev, kFloat64, {3}, {-1.5, -6.0, 4.5});
    check_result(ops::pow(f, 2.0), dev, kFloat64, {3}, {0.25, 4.0, 2.25});
    check_result(ops::pow(i, 2.0), dev, kInt32, {3}, {1, 4, 9});
    check_result(ops::pow(i, 3.0), dev, kInt32, {3}, {1, -8, 27});
    const Tensor bo = from_vector<double>({1, 0, 1}).to(dev, kBool);
    if (implements(dev, kInt64)) check_result(ops::add(bo, 1.0), dev, kInt64, {3}, {2, 1, 2});
  });
}

TEST_CASE("type promotion: result dtype and values of every pair of dtypes on every target") {
  // PyTorch's torch.promote_types, written out by hand.
  const DType f32 = kFloat32, f64 = kFloat64, f16 = kFloat16, bf = kBFloat16, i32 = kInt32,
              i64 = kInt64, u8 = kUInt8, b8 = kBool;
  const DType order[] = {f32, f64, f16, bf, i32, i64, u8, b8};
  const DType table[8][8] = {
      /* f32 */ {f32, f64, f32, f32, f32, f32, f32, f32},
      /* f64 */ {f64, f64, f64, f64, f64, f64, f64, f64},
      /* f16 */ {f32, f64, f16, f32, f16, f16, f16, f16},
      /* bf16*/ {f32, f64, f32, bf, bf, bf, bf, bf},
      /* i32 */ {f32, f64, f16, bf, i32, i64, i32, i32},
      /* i64 */ {f32, f64, f16, bf, i64, i64, i64, i64},
      /* u8  */ {f32, f64, f16, bf, i32, i64, u8, u8},
      /* b8  */ {f32, f64, f16, bf, i32, i64, u8, b8},
  };
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (int r = 0; r < 8; ++r) {
      for (int c = 0; c < 8; ++c) {
        const DType ta = order[r], tb = order[c], want = table[r][c];
        CAPTURE(ta);
        CAPTURE(tb);
        const Tensor a = random_tensor({3, 5}, ta, 0, 9, g).to(dev);
        const Tensor b = random_tensor({5}, tb, 0, 9, g).to(dev);
        if (!implements(dev, want)) {
          CHECK_THROWS_AS(ops::add(a, b), DTypeError);
          continue;
        }
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
        check_result(ops::add(a, b), dev, want, {3, 5}, expect);
      }
    }
  });
}

}  // namespace ember::test

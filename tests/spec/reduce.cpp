// Reductions on every target (tests/spec/spec.h) against naive float64 references: sum, mean,
// amax, amin, argmax, argmin, var and std over any dims, with keepdim, on every dtype and layout,
// rows from 0 to 40000 long (the GPU's one-block and multi-block paths); ties give the first
// index, NaN is the extreme; empty reductions.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ops/reduce.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

enum class Kind { sum, mean, amax, amin, argmax, argmin, var, std };

struct ReduceSpec {
  const char* name;
  Kind kind;
  bool ints;  // accepts integer and bool input
};

const ReduceSpec kReduce[] = {
    {"sum", Kind::sum, true},   {"mean", Kind::mean, false},    {"amax", Kind::amax, true},
    {"amin", Kind::amin, true}, {"argmax", Kind::argmax, true}, {"argmin", Kind::argmin, true},
    {"var", Kind::var, false},  {"std", Kind::std, false},
};

Tensor run(Kind k, const Tensor& a, const std::vector<int64_t>& dims, bool keepdim, int64_t corr) {
  switch (k) {
    case Kind::sum:
      return ops::sum(a, dims, keepdim);
    case Kind::mean:
      return ops::mean(a, dims, keepdim);
    case Kind::amax:
      return ops::amax(a, dims, keepdim);
    case Kind::amin:
      return ops::amin(a, dims, keepdim);
    case Kind::argmax:
      return ops::argmax(a, dims.empty() ? ops::kAllDims : dims[0], keepdim);
    case Kind::argmin:
      return ops::argmin(a, dims.empty() ? ops::kAllDims : dims[0], keepdim);
    case Kind::var:
      return ops::var(a, dims, corr, keepdim);
    case Kind::std:
      return ops::std(a, dims, corr, keepdim);
  }
  return {};
}

struct Expected {
  Shape shape;
  std::vector<double> values;
};

// Walks every input element once, sending it to its output slot (the index with reduced dims
// dropped); argmax/argmin index along the one reduced dim, or row-major over all dims.
Expected reference(Kind k, const Shape& shape, const std::vector<double>& v,
                   std::vector<int64_t> dims, bool keepdim, int64_t corr) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<bool> red(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims)
    if (nd > 0) red[d < 0 ? d + nd : d] = true;
  Shape out_shape, kept;
  int64_t count = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (red[d]) count *= shape[d];
    if (!red[d]) kept.push_back(shape[d]);
    if (!red[d] || keepdim) out_shape.push_back(red[d] ? 1 : shape[d]);
  }
  const size_t n_out = static_cast<size_t>(checked_numel(kept));
  std::vector<double> sum(n_out, 0.0), best(n_out, std::nan("")), arg(n_out, -1.0), m2(n_out, 0.0);
  std::vector<int64_t> seen(n_out, 0);
  const bool is_max = k == Kind::amax || k == Kind::argmax;
  for (size_t i = 0; i < v.size(); ++i) {
    const auto idx = unravel(static_cast<int64_t>(i), shape);
    int64_t o = 0, r = 0;
    for (int64_t d = 0; d < nd; ++d) {
      if (red[d])
        r = r * shape[d] + idx[d];
      else
        o = o * shape[d] + idx[d];
    }
    sum[o] += v[i];
    if (seen[o]++ == 0 || (is_max ? v[i] > best[o] : v[i] < best[o])) best[o] = v[i], arg[o] = r;
  }
  std::vector<double> out(n_out);
  for (size_t o = 0; o < n_out; ++o) {
    const double mean = sum[o] / static_cast<double>(count);
    switch (k) {
      case Kind::sum:
        out[o] = sum[o];
        break;
      case Kind::mean:
        out[o] = mean;
        break;
      case Kind::amax:
      case Kind::amin:
        out[o] = best[o];
        break;
      case Kind::argmax:
      case Kind::argmin:
        out[o] = arg[o];
        break;
      case Kind::var:
      case Kind::std:
        out[o] = 0.0;
        break;
    }
  }
  if (k == Kind::var || k == Kind::std) {
    for (size_t i = 0; i < v.size(); ++i) {
      const auto idx = unravel(static_cast<int64_t>(i), shape);
      int64_t o = 0;
      for (int64_t d = 0; d < nd; ++d)
        if (!red[d]) o = o * shape[d] + idx[d];
      const double dv = v[i] - sum[o] / static_cast<double>(count);
      m2[o] += dv * dv;
    }
    for (size_t o = 0; o < n_out; ++o) {
      const double var = m2[o] / static_cast<double>(std::max<int64_t>(count - corr, 0));
      out[o] = k == Kind::std ? std::sqrt(var) : var;
    }
  }
  return {out_shape, out};
}

DType result_dtype(Kind k, DType t) {
  if (k == Kind::argmax || k == Kind::argmin) return kInt64;
  if (k == Kind::sum && !is_floating(t)) return kInt64;
  return t;
}

struct Case {
  Shape shape;
  std::vector<int64_t> dims;
  Layout layout;
  bool large = false;  // Note [Large cases] in spec.h
};

}  // namespace

TEST_CASE("reductions match a float64 reference on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Case cases[] = {
      {{7, 13}, {0}, Layout::contiguous},
      {{7, 13}, {1}, Layout::contiguous},
      {{7, 13}, {}, Layout::contiguous},
      {{7, 13}, {-1}, Layout::transposed},
      {{7, 13}, {0}, Layout::sliced},
      {{7, 13}, {1}, Layout::expanded},
      {{7, 13}, {0, 1}, Layout::transposed},
      {{3, 1, 5, 4}, {0, 2}, Layout::contiguous},
      {{3, 1, 5, 4}, {1}, Layout::sliced},
      {{3, 1, 5, 4}, {3, 1}, Layout::transposed},
      {{4, 3, 37}, {0, 2}, Layout::transposed},
      {{2, 3, 4, 5}, {3, 1}, Layout::sliced},
      {{6, 5}, {0}, Layout::expanded},
      {{}, {}, Layout::contiguous},
      {{}, {0}, Layout::contiguous},
      {{1}, {0}, Layout::contiguous},
      {{0, 4}, {1}, Layout::contiguous},
      {{2, 0, 3}, {0}, Layout::contiguous},
      {{5, 700}, {1}, Layout::contiguous},
      {{700, 5}, {0}, Layout::transposed},
      {{257, 300}, {}, Layout::contiguous, true},
      {{257, 300}, {1}, Layout::contiguous, true},
      {{257, 300}, {0}, Layout::transposed, true},
      {{3, 40000}, {1}, Layout::contiguous, true},
      // Few long rows: split across blocks on a GPU (Note [Split reductions]); the first one
      // in every emulated thread order.
      {{32768}, {0}, Layout::sliced},
      {{40000, 3}, {0}, Layout::transposed, true},
  };
  const DType dtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
  for_each_target([&](Device dev) {
    for (const ReduceSpec& op : kReduce) {
      for (DType t : dtypes) {
        if (!is_floating(t) && !op.ints) continue;
        for (const Case& c : cases) {
          if (c.large && !runs_large_cases(dev)) continue;
          const bool arg = op.kind == Kind::argmax || op.kind == Kind::argmin;
          if (arg && c.dims.size() > 1) continue;
          for (bool keepdim : {false, true}) {
            const std::string name = op.name;
            CAPTURE(name);
            CAPTURE(t);
            CAPTURE(c.shape);
            CAPTURE(Shape(c.dims));
            CAPTURE(c.layout);
            CAPTURE(keepdim);
            // Integers in [-20, 20]: few distinct values, so argmax/argmin ties exercise "first
            // index".
            const Tensor a = random_operand(c.shape, t, c.layout, -20, 20, g, 0.0, dev);
            const int64_t corr = keepdim ? 0 : 1;
            const Expected want =
                reference(op.kind, c.shape, a.to_vector<double>(), c.dims, keepdim, corr);
            const DType rt = result_dtype(op.kind, t);
            std::vector<double> expect = want.values;
            for (double& e : expect) e = as_stored(e, rt);
            check_result(run(op.kind, a, c.dims, keepdim, corr), dev, rt, want.shape, expect);
          }
        }
      }
    }
  });
}

TEST_CASE("sum and mean of empty reductions; var with too few elements; max of nothing") {
  for_each_target([&](Device dev) {
    const Tensor e = zeros({0, 3}, {kFloat32, dev});
    check_result(ops::sum(e, {0}), dev, kFloat32, {3}, {0, 0, 0});
    CHECK(ops::sum(e, {1}).shape() == Shape{0});
    CHECK(std::isnan(ops::mean(e).item()));
    const Tensor one = ones({1, 3}, {kFloat64, dev});
    CHECK(std::isnan(ops::var(one, {0}).to_vector<double>()[0]));
    CHECK(ops::var(one, {0}, 0).to_vector<double>()[0] == 0.0);
    CHECK_THROWS_AS(ops::amax(e), ValueError);
    CHECK_THROWS_AS(ops::argmin(e, 0), ValueError);
  });
}

TEST_CASE("amax, amin, argmax and argmin treat NaN as the extreme, wherever it is") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::mt19937 g(fresh_seed());
  for_each_target([&](Device dev) {
    const Tensor a = from_vector<double>({1.0, nan, 3.0, nan}).to(dev);
    CHECK(std::isnan(ops::amax(a).item()));
    CHECK(std::isnan(ops::amin(a).item()));
    CHECK(ops::argmax(a).item() == 1.0);
    CHECK(ops::argmin(a).item() == 1.0);
    // One NaN among many values, in the middle of a row long enough for several warps.
    for (int64_t n : {70, 1000, 5001}) {
      CAPTURE(n);
      std::vector<double> v = random_tensor({n}, kFloat32, -2, 2, g).to_vector<double>();
      v[static_cast<size_t>(n / 2)] = nan;
      const Tensor x = from_vector(v, {n}).to(dev, kFloat32);
      CHECK(ops::argmax(x).item<int64_t>() == n / 2);
      CHECK(ops::argmin(x, 0).item<int64_t>() == n / 2);
      CHECK(std::isnan(ops::amax(x).item()));
      CHECK(std::isnan(ops::amin(x, {0}).item()));
    }
  });
}

}  // namespace ember::test

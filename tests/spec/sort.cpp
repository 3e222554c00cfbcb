// Sorting, scans and reordering copies on every target (tests/spec/spec.h), against references
// computed in the test: sort/argsort (stable, both directions, NaN last ascending and first
// descending, ties, rows shorter and much longer than one GPU tile), topk, kthvalue, unique,
// cumsum/cumprod (forward and reverse, strided and innermost dims, integer results in int64),
// cumprod's gradient with zeros in the input (against its definition), flip and roll.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/creation.h"
#include "ops/flip.h"
#include "ops/scan.h"
#include "ops/sort.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

const DType kSortTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};

// Each row of a [rows, n] host array sorted stably, NaN above every number.
void sort_reference(const std::vector<double>& v, int64_t rows, int64_t n, bool descending,
                    std::vector<double>& values, std::vector<double>& indices) {
  values.clear();
  indices.clear();
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> ix(static_cast<size_t>(n));
    std::iota(ix.begin(), ix.end(), int64_t{0});
    auto key = [&](int64_t i) { return v[r * n + i]; };
    std::stable_sort(ix.begin(), ix.end(), [&](int64_t a, int64_t b) {
      const double x = key(a), y = key(b);
      if (std::isnan(x) || std::isnan(y)) return descending ? std::isnan(x) && !std::isnan(y)
                                                            : std::isnan(y) && !std::isnan(x);
      return descending ? x > y : x < y;
    });
    for (int64_t i : ix) {
      values.push_back(key(i));
      indices.push_back(static_cast<double>(i));
    }
  }
}

}  // namespace

TEST_CASE("sort is stable in both directions, with ties, NaN and long rows, on every dtype") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {3, 7}, {5, 64}, {2, 1025}, {1, 5000}};
  for_each_target([&](Device dev) {
    for (DType t : kSortTypes) {
      for (auto [rows, n] : shapes) {
        for (bool descending : {false, true}) {
          CAPTURE(t);
          CAPTURE(rows);
          CAPTURE(n);
          CAPTURE(descending);
          if (n > 1024 && !runs_large_cases(dev)) continue;  // Note [Large cases]
          // Multiples of 0.5 in [-8, 8]: many ties, exact in every dtype.
          Tensor x = random_tensor({rows, n}, t, -8, 8, g, 0.5);
          if (is_floating(t) && n > 3) {
            x.select(1, 1).fill_(nan);
            x.select(1, n - 2).fill_(nan);
          }
          x = x.to(dev);
          if (!implements(dev, t)) {
            CHECK_THROWS_AS(ops::sort(x, 1, descending), DTypeError);
            continue;
          }
          std::vector<double> values, indices;
          sort_reference(x.to_vector<double>(), rows, n, descending, values, indices);
          const ops::SortResult r = ops::sort(x, 1, descending);
          check_result(r.values, dev, t, {rows, n}, values, {0, 0, 0});
          check_result(r.indices, dev, kInt64, {rows, n}, indices);
          check_result(ops::argsort(x, -1, descending), dev, kInt64, {rows, n}, indices);
        }
      }
    }
  });
}

TEST_CASE("sort along a middle dim of a non-contiguous tensor, and of 0-d and empty tensors") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    const Tensor x = random_operand({4, 6, 5}, kFloat32, Layout::transposed, -3, 3, g, 0, dev);
    const ops::SortResult r = ops::sort(x, 1, false);
    // Reference on the dim moved last.
    const std::vector<double> xt = x.transpose(1, 2).contiguous().to_vector<double>();
    std::vector<double> v, i;
    sort_reference(xt, 20, 6, false, v, i);
    check_result(r.values.transpose(1, 2).contiguous(), dev, kFloat32, {4, 5, 6}, v);
    check_result(r.indices.transpose(1, 2).contiguous(), dev, kInt64, {4, 5, 6}, i);
    const Tensor s = full({}, 2.5, {kFloat32, dev});
    check_result(ops::sort(s).values, dev, kFloat32, {}, {2.5});
    check_result(ops::sort(s).indices, dev, kInt64, {}, {0});
    check_result(ops::sort(zeros({3, 0}, {kFloat32, dev}), 1).values, dev, kFloat32, {3, 0}, {});
  });
}

TEST_CASE("topk, kthvalue and unique") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kBFloat16, kInt64}) {
      CAPTURE(t);
      const Tensor x = random_tensor({3, 9}, t, -4, 4, g, 0.5).to(dev);
      std::vector<double> desc, di, asc, ai;
      sort_reference(x.to_vector<double>(), 3, 9, true, desc, di);
      sort_reference(x.to_vector<double>(), 3, 9, false, asc, ai);
      auto first = [](const std::vector<double>& v, int64_t k) {
        std::vector<double> out;
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t j = 0; j < k; ++j) out.push_back(v[r * 9 + j]);
        return out;
      };
      const ops::SortResult top = ops::topk(x, 4, 1, true);
      check_result(top.values, dev, t, {3, 4}, first(desc, 4), {0, 0, 0});
      check_result(top.indices, dev, kInt64, {3, 4}, first(di, 4));
      const ops::SortResult low = ops::topk(x, 2, 1, false);
      check_result(low.values, dev, t, {3, 2}, first(asc, 2), {0, 0, 0});
      const ops::SortResult kth = ops::kthvalue(x, 3, 1, true);
      std::vector<double> kv, ki;
      for (int r = 0; r < 3; ++r) kv.push_back(asc[r * 9 + 2]), ki.push_back(ai[r * 9 + 2]);
      check_result(kth.values, dev, t, {3, 1}, kv, {0, 0, 0});
      check_result(kth.indices, dev, kInt64, {3, 1}, ki);
      // unique: sorted distinct values, the inverse and the counts.
      const std::vector<double> xv = x.to_vector<double>();
      std::vector<double> uniq(xv);
      std::sort(uniq.begin(), uniq.end());
      uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
      std::vector<double> inverse, counts(uniq.size(), 0.0);
      for (double v : xv) {
        const int64_t k = std::lower_bound(uniq.begin(), uniq.end(), v) - uniq.begin();
        inverse.push_back(static_cast<double>(k));
        counts[k] += 1;
      }
      const ops::UniqueResult u = ops::unique(x, true, true);
      const int64_t nu = static_cast<int64_t>(uniq.size());
      check_result(u.values, dev, t, {nu}, uniq, {0, 0, 0});
      check_result(u.inverse, dev, kInt64, {3, 9}, inverse);
      check_result(u.counts, dev, kInt64, {nu}, counts);
    }
    CHECK_THROWS_AS(ops::topk(zeros({3}, {kFloat32, dev}), 4), IndexError);
    CHECK_THROWS_AS(ops::kthvalue(zeros({3}, {kFloat32, dev}), 0), IndexError);
  });
}

TEST_CASE("unique along a dim gives the distinct slices in lexicographic order") {
  for_each_target([&](Device dev) {
    const Tensor x = from_vector<int64_t>({1, 2, 0, 1, 2, 0, 1, 1, 3, 0, 0, 1}, {4, 3}).to(dev);
    // Rows: [1,2,0] [1,2,0] [1,1,3] [0,0,1] -> distinct sorted: [0,0,1] [1,1,3] [1,2,0].
    const ops::UniqueResult u = ops::unique(x, true, true, 0);
    check_result(u.values, dev, kInt64, {3, 3}, {0, 0, 1, 1, 1, 3, 1, 2, 0});
    check_result(u.inverse, dev, kInt64, {4}, {2, 2, 1, 0});
    check_result(u.counts, dev, kInt64, {3}, {1, 1, 2});
  });
}

TEST_CASE("cumsum and cumprod along strided and innermost dims, forward and reverse") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const std::pair<Shape, int64_t> cases[] = {
      {{7}, 0}, {{3, 5, 4}, 1}, {{3, 5, 4}, 2}, {{2, 700}, 1}, {{1, 3000}, 1}, {{0, 4}, 1}};
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
      for (const auto& [shape, dim] : cases) {
        for (bool reverse : {false, true}) {
          for (bool prod : {false, true}) {
            if (prod && reverse) continue;
            CAPTURE(t);
            CAPTURE(shape);
            CAPTURE(dim);
            CAPTURE(reverse);
            CAPTURE(prod);
            if (checked_numel(shape) > 1000 && !runs_large_cases(dev)) continue;
            // Products of values near 1 stay in range; sums of small values too.
            const Tensor x = prod ? random_tensor(shape, t, 0.9, 1.1, g)
                                  : random_tensor(shape, t, -2, 2, g);
            const Tensor xd = x.to(dev);
            const DType rt = is_floating(t) ? t : kInt64;
            const std::vector<double> v = x.to_vector<double>();
            std::vector<double> want(v.size());
            const int64_t n = shape[dim];
            int64_t inner = 1;
            for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
            const int64_t outer = n == 0 ? 0 : static_cast<int64_t>(v.size()) / (n * inner);
            for (int64_t o = 0; o < outer; ++o)
              for (int64_t j = 0; j < inner; ++j) {
                double acc = prod ? 1.0 : 0.0;
                for (int64_t s = 0; s < n; ++s) {
                  const int64_t i = reverse ? n - 1 - s : s;
                  const int64_t at = (o * n + i) * inner + j;
                  acc = prod ? acc * v[at] : acc + v[at];
                  want[at] = as_stored(acc, rt);
                }
              }
            const Tensor got = prod ? ops::cumprod(xd, dim) : ops::cumsum(xd, dim, std::nullopt, reverse);
            // A sum of n terms rounds at the size of the running total.
            check_result(got, dev, rt, shape, want, scaled_tolerance(rt, 4 * std::max<int64_t>(n, 1)));
          }
        }
      }
    }
  });
}

TEST_CASE("cumprod's gradient matches its definition, zeros in the input included") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kBFloat16}) {
      CAPTURE(t);
      Tensor x = random_tensor({3, 6}, t, -2, 2, g);
      x.select(1, 2).select(0, 0).fill_(0.0);  // one zero in row 0
      x.select(1, 1).select(0, 1).fill_(0.0);  // two zeros in row 1
      x.select(1, 4).select(0, 1).fill_(0.0);
      const Tensor dy = random_tensor({3, 6}, t, -1, 1, g);
      const std::vector<double> xv = x.to_vector<double>(), gv = dy.to_vector<double>();
      std::vector<double> want(18);
      for (int r = 0; r < 3; ++r)
        for (int i = 0; i < 6; ++i) {
          double s = 0;
          for (int k = i; k < 6; ++k) {
            double p = gv[r * 6 + k];
            for (int m = 0; m <= k; ++m)
              if (m != i) p *= xv[r * 6 + m];
            s += p;
          }
          want[r * 6 + i] = as_stored(s, t);
        }
      check_result(ops::cumprod_backward(x.to(dev), dy.to(dev), 1), dev, t, {3, 6}, want,
                   scaled_tolerance(t, 64));
    }
  });
}

TEST_CASE("flip and roll reorder every dtype along any dims") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat16, kInt64, kBool}) {
      CAPTURE(t);
      const Shape shape{3, 4, 5};
      const Tensor x = random_operand(shape, t, Layout::sliced, -9, 9, g, 0, dev);
      const std::vector<double> v = x.to_vector<double>();
      std::vector<double> flipped(v.size()), rolled(v.size());
      for (int64_t p = 0; p < 60; ++p) {
        const auto c = unravel(p, shape);
        flipped[p] = v[(c[0] * 4 + (3 - c[1])) * 5 + (4 - c[2])];
        // roll by 1 along dim 0 and by -2 along dim 2: out[c] = x[c0 - 1, c1, c2 + 2].
        rolled[p] = v[(((c[0] + 2) % 3) * 4 + c[1]) * 5 + (c[2] + 2) % 5];
      }
      check_result(ops::flip(x, {1, -1}), dev, t, shape, flipped, {0, 0, 0});
      check_result(ops::roll(x, {1, -2}, {0, 2}), dev, t, shape, rolled, {0, 0, 0});
      // Without dims: the flattened tensor rolled.
      std::vector<double> flat(v.size());
      for (size_t p = 0; p < v.size(); ++p) flat[(p + 7) % v.size()] = v[p];
      check_result(ops::roll(x, {7}, {}), dev, t, shape, flat, {0, 0, 0});
    }
    CHECK_THROWS_AS(ops::flip(zeros({2, 2}, {kFloat32, dev}), {0, 0}), ValueError);
    CHECK_THROWS_AS(ops::roll(zeros({2, 2}, {kFloat32, dev}), {1, 2}, {0}), ValueError);
  });
}

TEST_CASE("randperm and randint draw the same numbers on every target") {
  manual_seed(42);
  const std::vector<int64_t> perm = ops::randperm(50).to_vector<int64_t>();
  std::vector<int64_t> sorted(perm);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 50; ++i) CHECK(sorted[i] == i);
  manual_seed(42);
  const std::vector<int64_t> ints = ops::randint(-3, 4, {200}).to_vector<int64_t>();
  for (int64_t v : ints) CHECK((v >= -3 && v < 4));
  for_each_target([&](Device dev) {
    manual_seed(42);
    CHECK(ops::randperm(50, {kInt64, dev}).to_vector<int64_t>() == perm);
    manual_seed(42);
    CHECK(ops::randint(-3, 4, {200}, {kInt64, dev}).to_vector<int64_t>() == ints);
  });
  CHECK_THROWS_AS(ops::randint(3, 3, {2}), ValueError);
}

TEST_CASE("linspace, logspace and eye") {
  for_each_target([&](Device dev) {
    check_result(ops::linspace(-1, 1, 5, {kFloat64, dev}), dev, kFloat64, {5},
                 {-1, -0.5, 0, 0.5, 1});
    check_result(ops::linspace(0, 1, 1, {kFloat32, dev}), dev, kFloat32, {1}, {0});
    check_result(ops::logspace(0, 3, 4, 10, {kFloat64, dev}), dev, kFloat64, {4},
                 {1, 10, 100, 1000});
    check_result(ops::eye(2, 3, {kInt64, dev}), dev, kInt64, {2, 3}, {1, 0, 0, 0, 1, 0});
    CHECK_THROWS_AS(ops::linspace(0, 1, -1), ValueError);
  });
}

}  // namespace ember::test

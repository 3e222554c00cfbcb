// Indexing through index tensors on every target (tests/spec/spec.h) against references that
// walk the positions in the test: advanced indexing (adjacent and split indexed dims, broadcast
// index shapes, masks, negative and repeated indices, non-contiguous operands), index_put_ with
// and without accumulation over repeated indices (last write wins; sums in position order),
// gather, scatter_, scatter_add_, index_select, index_add_, nonzero and masked_select; every dtype
// for the reads and assignments (they move bytes), the compute dtypes for the sums; out-of-range
// indices reported with the index and the size.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>

#include "ops/index.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

const DType kAllDTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};

// Random int64 indices in [-size, size) (negative ones count from the end).
Tensor random_index(const Shape& shape, int64_t size, std::mt19937& g, Device dev) {
  std::uniform_int_distribution<int64_t> u(-size, size - 1);
  std::vector<int64_t> v(static_cast<size_t>(checked_numel(shape)));
  for (int64_t& x : v) x = u(g);
  return from_vector(v, shape).to(dev);
}

int64_t wrap(int64_t v, int64_t n) {
  return v < 0 ? v + n : v;
}

// x[indices] for indices[d] (host values and shapes; an empty shape list entry = ":"), by
// PyTorch's rule: index shapes broadcast to B; B replaces the indexed dims when they are
// adjacent, else goes first.
struct AdvancedRef {
  Shape shape;
  std::vector<int64_t> source;  // per result element: row-major position in x
};
AdvancedRef advanced_reference(const Shape& xs, const std::vector<std::optional<Tensor>>& indices) {
  std::vector<std::vector<int64_t>> vals;
  std::vector<Shape> shapes;
  std::vector<int64_t> dims;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d]) continue;
    vals.push_back(indices[d]->to_vector<int64_t>());
    shapes.push_back(indices[d]->shape());
    dims.push_back(static_cast<int64_t>(d));
  }
  Shape b;
  for (const Shape& s : shapes) {
    Shape out(std::max(b.size(), s.size()), 1);
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t x = i + b.size() >= out.size() ? b[i + b.size() - out.size()] : 1;
      const int64_t y = i + s.size() >= out.size() ? s[i + s.size() - out.size()] : 1;
      out[i] = x == 1 ? y : x;
    }
    b = out;
  }
  bool adjacent = true;
  for (size_t k = 1; k < dims.size(); ++k) adjacent &= dims[k] == dims[k - 1] + 1;
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < static_cast<int64_t>(xs.size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(d);
  AdvancedRef r;
  // Result dims: kept before, B, kept after (adjacent) or B, kept.
  const int64_t b_at = adjacent ? dims[0] : 0;
  std::vector<int64_t> dim_of;  // x dim per result dim, -1 for B dims
  if (!adjacent)
    for (size_t j = 0; j < b.size(); ++j) dim_of.push_back(-1);
  for (int64_t d = 0; d < static_cast<int64_t>(xs.size()); ++d) {
    if (adjacent && d == dims[0])
      for (size_t j = 0; j < b.size(); ++j) dim_of.push_back(-1);
    if (std::find(kept.begin(), kept.end(), d) != kept.end()) dim_of.push_back(d);
  }
  for (size_t i = 0; i < dim_of.size(); ++i)
    r.shape.push_back(dim_of[i] >= 0 ? xs[dim_of[i]] : b[i - b_at]);
  const Shape xstr = contiguous_strides(xs);
  for (int64_t p = 0; p < checked_numel(r.shape); ++p) {
    const auto c = unravel(p, r.shape);
    std::vector<int64_t> bc(c.begin() + b_at, c.begin() + b_at + b.size());
    int64_t src = 0;
    for (size_t i = 0; i < dim_of.size(); ++i)
      if (dim_of[i] >= 0) src += c[i] * xstr[dim_of[i]];
    for (size_t k = 0; k < dims.size(); ++k)
      src += wrap(vals[k][broadcast_source(bc, shapes[k])], xs[dims[k]]) * xstr[dims[k]];
    r.source.push_back(src);
  }
  return r;
}

struct IndexCase {
  Shape x;
  Layout layout;
  std::vector<std::optional<Shape>> index_shapes;  // nullopt = ":"
};

const IndexCase kIndexCases[] = {
    {{5, 7}, Layout::contiguous, {Shape{3}}},
    {{5, 7}, Layout::transposed, {std::nullopt, Shape{4, 2}}},
    {{4, 5, 6}, Layout::sliced, {std::nullopt, Shape{2, 3}}},
    {{4, 5, 6}, Layout::contiguous, {Shape{3}, std::nullopt, Shape{1, 3}}},   // split: B first
    {{4, 5, 6}, Layout::expanded, {std::nullopt, Shape{2, 1}, Shape{3}}},     // adjacent, broadcast
    {{3, 4}, Layout::contiguous, {Shape{0}}},                                 // no indices
    {{6}, Layout::contiguous, {Shape{}}},                                     // a 0-d index
    {{1, 9, 1}, Layout::contiguous, {std::nullopt, Shape{11}}},
    {{300, 33}, Layout::contiguous, {Shape{1000}}},                           // many blocks
};

std::vector<Tensor> defined(const std::vector<std::optional<Tensor>>& v) {
  std::vector<Tensor> out;
  for (const auto& t : v) out.push_back(t ? *t : Tensor());
  return out;
}

}  // namespace

TEST_CASE("advanced indexing reads every dtype as PyTorch's rule places the dims") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (const IndexCase& c : kIndexCases) {
      for (DType t : kAllDTypes) {
        CAPTURE(c.x);
        CAPTURE(t);
        const Tensor x = random_operand(c.x, t, c.layout, -50, 50, g, 0.0, dev);
        std::vector<std::optional<Tensor>> idx;
        for (size_t d = 0; d < c.index_shapes.size(); ++d)
          idx.push_back(c.index_shapes[d] ? std::optional<Tensor>(random_index(
                                                *c.index_shapes[d], c.x[d], g, dev))
                                          : std::nullopt);
        const AdvancedRef ref = advanced_reference(c.x, idx);
        const std::vector<double> xv = x.to_vector<double>();
        std::vector<double> want;
        for (int64_t s : ref.source) want.push_back(xv[s]);
        check_result(ops::index(x, defined(idx)), dev, t, ref.shape, want, {0, 0, 0});
      }
    }
  });
}

TEST_CASE("bool masks index the elements where they are true") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    const Tensor x = random_tensor({4, 5, 3}, kFloat32, -5, 5, g).to(dev);
    const Tensor mask = random_tensor({4, 5}, kBool, 0, 1, g).to(dev);
    const std::vector<double> xv = x.to_vector<double>(), mv = mask.to_vector<double>();
    std::vector<double> want;
    int64_t count = 0;
    for (int64_t i = 0; i < 20; ++i) {
      if (mv[i] == 0) continue;
      ++count;
      for (int64_t k = 0; k < 3; ++k) want.push_back(xv[i * 3 + k]);
    }
    check_result(ops::index(x, {mask}), dev, kFloat32, {count, 3}, want);
    // masked_select broadcasts the mask over x.
    std::vector<double> sel;
    for (int64_t i = 0; i < 60; ++i)
      if (mv[i / 3] != 0) sel.push_back(xv[i]);
    check_result(ops::masked_select(x, mask.unsqueeze(2)), dev, kFloat32,
                 {static_cast<int64_t>(sel.size())}, sel);
    // nonzero: coordinates in row-major order.
    std::vector<double> coords;
    for (int64_t i = 0; i < 20; ++i)
      if (mv[i] != 0) coords.insert(coords.end(), {double(i / 5), double(i % 5)});
    check_result(ops::nonzero(mask), dev, kInt64, {count, 2}, coords);
  });
}

TEST_CASE("index_put_ assigns (last write wins) and accumulates repeated indices in order") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (DType t : kAllDTypes) {
      for (bool accumulate : {false, true}) {
        CAPTURE(t);
        CAPTURE(accumulate);
        if (accumulate && t == kBool) continue;
        Tensor x = random_tensor({6, 4}, t, -8, 8, g).to(dev);
        // Rows 1 and -5 (= 1) repeat; values of shape [5, 4].
        const Tensor rows = from_vector<int64_t>({1, 3, -5, 0, 1}, {5}).to(dev);
        const Tensor v = random_tensor({5, 4}, t, -8, 8, g).to(dev);
        std::vector<double> want = x.to_vector<double>();
        const std::vector<double> vv = v.to_vector<double>();
        const int64_t r[] = {1, 3, 1, 0, 1};
        std::map<int64_t, double> sums;
        for (int k = 0; k < 5; ++k)
          for (int j = 0; j < 4; ++j) {
            const int64_t at = r[k] * 4 + j;
            if (accumulate)
              sums[at] += vv[k * 4 + j];
            else
              want[at] = vv[k * 4 + j];
          }
        for (auto& [at, s] : sums) want[at] = as_stored(want[at] + s, t);
        if (accumulate && !implements(dev, t)) {
          CHECK_THROWS_AS(ops::index_put_(x, {rows}, v, true), DTypeError);
          continue;
        }
        ops::index_put_(x, {rows}, v, accumulate);
        check_result(x, dev, t, {6, 4}, want, scaled_tolerance(t, 16));
      }
    }
  });
}

TEST_CASE("gather, index_select, scatter_, scatter_add_ and index_add_ along a dim") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kInt64}) {
      CAPTURE(t);
      // x [5, 6, 3]; gather along dim 1 with index [5, 4, 2] (smaller outside dim 1).
      const Tensor x = random_operand({5, 6, 3}, t, Layout::transposed, -9, 9, g, 0, dev);
      const Tensor idx = random_index({5, 4, 2}, 6, g, dev);
      const std::vector<double> xv = x.to_vector<double>();
      const std::vector<int64_t> iv = idx.to_vector<int64_t>();
      std::vector<double> want;
      for (int64_t p = 0; p < 40; ++p) {
        const auto c = unravel(p, {5, 4, 2});
        want.push_back(xv[(c[0] * 6 + wrap(iv[p], 6)) * 3 + c[2]]);
      }
      check_result(ops::gather(x, 1, idx), dev, t, {5, 4, 2}, want, {0, 0, 0});

      // index_select along dim 2 with repeats.
      const Tensor sel = from_vector<int64_t>({2, 0, 2, -1}, {4}).to(dev);
      std::vector<double> want_sel;
      for (int64_t p = 0; p < 5 * 6 * 4; ++p) {
        const auto c = unravel(p, {5, 6, 4});
        const int64_t k[] = {2, 0, 2, 2};
        want_sel.push_back(xv[(c[0] * 6 + c[1]) * 3 + k[c[2]]]);
      }
      check_result(ops::index_select(x, 2, sel), dev, t, {5, 6, 4}, want_sel, {0, 0, 0});

      // scatter_ / scatter_add_ into y [5, 6, 3] along dim 1 from src [5, 4, 3] (larger than idx).
      const Tensor src = random_tensor({5, 4, 3}, t, -9, 9, g).to(dev);
      const std::vector<double> sv = src.to_vector<double>();
      for (bool add : {false, true}) {
        CAPTURE(add);
        Tensor y = random_tensor({5, 6, 3}, t, -9, 9, g).to(dev);
        std::vector<double> wy = y.to_vector<double>();
        std::map<int64_t, double> sums;
        for (int64_t p = 0; p < 40; ++p) {
          const auto c = unravel(p, {5, 4, 2});
          const int64_t at = (c[0] * 6 + wrap(iv[p], 6)) * 3 + c[2];
          const double v = sv[(c[0] * 4 + c[1]) * 3 + c[2]];
          if (add)
            sums[at] += v;
          else
            wy[at] = v;
        }
        for (auto& [at, s] : sums) wy[at] = as_stored(wy[at] + s, t);
        ops::scatter_(y, 1, idx, src, add);
        check_result(y, dev, t, {5, 6, 3}, wy, scaled_tolerance(t, 16));
      }

      // index_add_ along dim 0: rows 4, 0, 4 of z get src rows 0, 1, 2.
      Tensor z = random_tensor({5, 2}, t, -9, 9, g).to(dev);
      const Tensor s3 = random_tensor({3, 2}, t, -9, 9, g).to(dev);
      std::vector<double> wz = z.to_vector<double>();
      const std::vector<double> s3v = s3.to_vector<double>();
      for (int j = 0; j < 2; ++j) {
        wz[4 * 2 + j] = as_stored(wz[4 * 2 + j] + s3v[0 * 2 + j] + s3v[2 * 2 + j], t);
        wz[0 * 2 + j] = as_stored(wz[0 * 2 + j] + s3v[1 * 2 + j], t);
      }
      ops::index_add_(z, 0, from_vector<int64_t>({4, 0, -1}, {3}).to(dev), s3);
      check_result(z, dev, t, {5, 2}, wz, scaled_tolerance(t, 16));
    }
  });
}

TEST_CASE("gather and scatter_add_ along a contiguous last dim: rows in range, and with negatives") {
  // The cpu walks a run along a contiguous last dim in a loop of its own (Note [Index runs in
  // one pass]), where a negative index takes the branch that wraps it. Rows without and with
  // negative indices, against references walked here in float64.
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const int64_t rows = 6, size = 37, len = 53;
  std::uniform_int_distribution<int64_t> u(0, size - 1);
  std::vector<int64_t> iv(rows * len);
  for (int64_t& v : iv) v = u(g);
  for (int64_t j = 0; j < len; j += 5) iv[3 * len + j] -= size;  // row 3: every 5th negative
  const Tensor idx = from_vector(iv, {rows, len});
  const Tensor x = random_tensor({rows, size}, kFloat32, -1, 1, g);
  const Tensor src = random_tensor({rows, len}, kFloat32, -1, 1, g);
  const std::vector<double> xv = x.to_vector<double>(), sv = src.to_vector<double>();
  std::vector<double> want_gather, want_sum(rows * size, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < len; ++j) {
      const int64_t at = r * size + wrap(iv[r * len + j], size);
      want_gather.push_back(xv[at]);
      want_sum[at] += sv[r * len + j];
    }
  for_each_target([&](Device dev) {
    check_result(ops::gather(x.to(dev), 1, idx.to(dev)), dev, kFloat32, {rows, len}, want_gather,
                 {0, 0, 0});
    Tensor y = zeros({rows, size}, {kFloat32, dev});
    ops::scatter_(y, 1, idx.to(dev), src.to(dev), true);
    check_result(y, dev, kFloat32, {rows, size}, want_sum, scaled_tolerance(kFloat32, len));
  });
  // One index out of range inside a run (the cpu checks four at a time): the error names it, and
  // every other position of the run is still added.
  std::vector<int64_t> bad_iv(iv.begin(), iv.begin() + len);
  bad_iv[10] = size + 3;
  const Tensor bad_idx = from_vector(bad_iv, {1, len});
  const Tensor src1 = random_tensor({1, len}, kFloat32, -1, 1, g);
  const std::vector<double> s1 = src1.to_vector<double>();
  std::vector<double> want1(size, 0.0);
  for (int64_t j = 0; j < len; ++j)
    if (j != 10) want1[wrap(bad_iv[j], size)] += s1[j];
  const std::string names = "index " + std::to_string(size + 3) +
                            " is out of bounds for dimension 1 with size " + std::to_string(size);
  for_each_target([&](Device dev) {
    check_message(message_of([&] { ops::gather(x.to(dev), 1, bad_idx.to(dev)); }),
                  {"gather", names});
    Tensor y = zeros({1, size}, {kFloat32, dev});
    check_message(message_of([&] { ops::scatter_(y, 1, bad_idx.to(dev), src1.to(dev), true); }),
                  {names});
    check_result(y, dev, kFloat32, {1, size}, want1, scaled_tolerance(kFloat32, len));
  });
}

TEST_CASE("repeated indices sum in position order: the same bits on every target") {
  // Many values onto few slots: the order of the additions decides the float32 rounding, so every
  // target must give the cpu's result exactly (Note [Scatter order]).
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Tensor src = random_tensor({3000}, kFloat32, -1, 1, g);
  const Tensor idx = random_index({3000}, 7, g, kCPU);
  Tensor expect = zeros({7});
  ops::index_put_(expect, {idx}, src, true);
  // Large enough for the cpu to split the positions between threads (Note [Parallel scatter
  // on the cpu]): scatter_add_ along dim 1 splits dim 0, index_add_ along dim 0 splits dim 1.
  const Tensor src2 = random_tensor({64, 1000}, kFloat32, -1, 1, g);
  const Tensor idx2 = random_index({64, 1000}, 9, g, kCPU);
  Tensor expect2 = zeros({64, 9});
  ops::scatter_(expect2, 1, idx2, src2, true);
  const Tensor rows = random_index({20000}, 5, g, kCPU);
  const Tensor src3 = random_tensor({20000, 4}, kFloat32, -1, 1, g);
  Tensor expect3 = zeros({5, 4});
  ops::index_add_(expect3, 0, rows, src3);
  // The cpu's parallel result is the serial one: a plain loop in position order, in float.
  std::vector<float> serial(64 * 9, 0.0f);
  const std::vector<float> s2 = src2.to_vector<float>();
  const std::vector<int64_t> i2 = idx2.to_vector<int64_t>();
  for (int r = 0; r < 64; ++r)
    for (int j = 0; j < 1000; ++j) serial[r * 9 + wrap(i2[r * 1000 + j], 9)] += s2[r * 1000 + j];
  CHECK(expect2.to_vector<float>() == serial);
  for_each_target([&](Device dev) {
    Tensor got = zeros({7}, {kFloat32, dev});
    ops::index_put_(got, {idx.to(dev)}, src.to(dev), true);
    CHECK(got.to_vector<float>() == expect.to_vector<float>());
    Tensor got2 = zeros({64, 9}, {kFloat32, dev});
    ops::scatter_(got2, 1, idx2.to(dev), src2.to(dev), true);
    CHECK(got2.to_vector<float>() == expect2.to_vector<float>());
    Tensor got3 = zeros({5, 4}, {kFloat32, dev});
    ops::index_add_(got3, 0, rows.to(dev), src3.to(dev));
    CHECK(got3.to_vector<float>() == expect3.to_vector<float>());
  });
}

TEST_CASE("out-of-range indices raise IndexError naming the index and the size") {
  for_each_target([&](Device dev) {
    const Tensor x = zeros({5, 3}, {kFloat32, dev});
    const Tensor bad = from_vector<int64_t>({0, 7, -6}, {3}).to(dev);
    check_message(message_of([&] { ops::index(x, {bad}); }),
                  {"index 7 is out of bounds for dimension 0 with size 5"});
    CHECK_THROWS_AS(ops::index(x, {bad}), IndexError);
    check_message(message_of([&] { ops::index_select(x, 1, from_vector<int64_t>({3}, {1}).to(dev)); }),
                  {"index_select", "index 3 is out of bounds for dimension 1 with size 3"});
    Tensor y = zeros({5, 3}, {kFloat32, dev});
    check_message(message_of([&] { ops::index_put_(y, {bad}, ones({}, {kFloat32, dev}), true); }),
                  {"index 7 is out of bounds for dimension 0 with size 5"});
    check_message(
        message_of([&] { ops::gather(x, 0, from_vector<int64_t>({-6}, {1, 1}).to(dev)); }),
        {"gather", "index -6 is out of bounds for dimension 0 with size 5"});
    // Nothing was written for the bad positions; the good one was.
    check_result(y, dev, kFloat32, {5, 3}, {1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    CHECK_THROWS_AS(ops::index(x, {from_vector<double>({0.0}, {1}).to(dev)}), DTypeError);
    CHECK_THROWS_AS(ops::gather(x, 0, from_vector<int64_t>({0}, {1}).to(dev)), ShapeError);
    CHECK_THROWS_AS(ops::scatter_(y, 0, zeros({2, 3}, {kInt64, dev}), zeros({1, 3}, {kFloat32, dev}),
                                  false),
                    ShapeError);
    // Large enough for the cpu to split the columns between threads (Note [Parallel scatter on
    // the cpu]): the bad index is still the one reported, with its value.
    std::vector<int64_t> rows(20000, 1);
    rows[12345] = 999;
    Tensor z = zeros({5, 4}, {kFloat32, dev});
    check_message(message_of([&] {
                    ops::index_add_(z, 0, from_vector(rows, {20000}).to(dev),
                                    ones({20000, 4}, {kFloat32, dev}));
                  }),
                  {"index_add_", "index 999 is out of bounds for dimension 0 with size 5"});
  });
}

}  // namespace ember::test

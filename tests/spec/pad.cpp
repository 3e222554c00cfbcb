// F.pad on every target (tests/spec/spec.h): constant, reflect, replicate and circular modes
// against PyTorch's index rules written out here in float64 loops (negative pads crop; circular
// crops first, then wraps), the backward against a float64 scatter of the output gradient onto
// the elements each output read (the kernels gather instead). Odd shapes, 1 to 3 padded dims,
// pads larger than the dim (replicate), empty tensors, non-contiguous inputs; float32, float64,
// float16, bfloat16 and, for constant padding, int64. Typed errors for bad arguments.
#include <doctest/doctest.h>

#include <algorithm>

#include "autograd/pad.h"
#include "ops/pad.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

using ops::PadMode;

struct PadCase {
  Shape shape;
  std::vector<int64_t> pad;
  PadMode mode;
  Layout layout = Layout::contiguous;
  double value = 0;
};

// The input coordinate output coordinate o reads along a dim of size n padded by (b, a), or -1.
int64_t source(PadMode mode, int64_t o, int64_t n, int64_t b, int64_t a) {
  if (mode == PadMode::circular) {  // crop by the negative pads, then wrap the rest
    const int64_t lo = std::max<int64_t>(-b, 0), m = n - lo - std::max<int64_t>(-a, 0);
    const int64_t q = ((o - std::max<int64_t>(b, 0)) % m + m) % m;
    return lo + q;
  }
  const int64_t p = o - b;
  if (p >= 0 && p < n) return p;
  if (mode == PadMode::constant) return -1;
  if (mode == PadMode::replicate) return p < 0 ? 0 : n - 1;
  return p < 0 ? -p : 2 * (n - 1) - p;  // reflect, the edge not repeated
}

struct PadRef {
  Shape out;
  std::vector<double> y, dx;
};

PadRef pad_reference(const PadCase& c, const std::vector<double>& x, const std::vector<double>& dy,
                     bool with_grad) {
  const int64_t dims = static_cast<int64_t>(c.shape.size());
  const int64_t pairs = static_cast<int64_t>(c.pad.size()) / 2;
  PadRef r;
  r.out = c.shape;
  for (int64_t k = 0; k < pairs; ++k) r.out[dims - 1 - k] += c.pad[2 * k] + c.pad[2 * k + 1];
  const int64_t total = checked_numel(r.out);
  r.y.assign(static_cast<size_t>(total), c.value);
  r.dx.assign(x.size(), 0.0);
  for (int64_t e = 0; e < total; ++e) {
    const std::vector<int64_t> oi = unravel(e, r.out);
    int64_t src = 0;
    bool inside = true;
    for (int64_t d = 0; d < dims; ++d) {
      const int64_t k = dims - 1 - d;  // the pair of dim d, or none
      int64_t s = oi[d];
      if (k < pairs) s = source(c.mode, oi[d], c.shape[d], c.pad[2 * k], c.pad[2 * k + 1]);
      inside = inside && s >= 0;
      src = src * c.shape[d] + std::max<int64_t>(s, 0);
    }
    if (!inside) continue;
    r.y[e] = x[src];
    if (with_grad) r.dx[src] += dy[e];
  }
  return r;
}

void check_pad(const PadCase& c, DType t, Device dev, std::mt19937& gen) {
  const Tensor x = random_operand(c.shape, t, c.layout, -4, 4, gen, 0.0, dev);
  const Tensor y = ops::pad(x, c.pad, c.mode, c.value);
  const bool grad = is_floating(t);
  const Tensor dy = random_tensor(y.shape(), grad ? t : kFloat32, -1, 1, gen).to(dev);
  const PadRef want = pad_reference(c, x.to_vector<double>(), dy.to_vector<double>(), grad);
  check_result(y, dev, t, want.out, want.y);
  CHECK(ops::pad_output_shape(c.shape, c.pad, c.mode) == want.out);
  if (!grad) return;
  // Each input gradient sums at most a few outputs per dim, or a replicated edge's run of them.
  check_result(ops::pad_backward(dy, c.shape, c.pad, c.mode), dev, t, c.shape, want.dx,
               scaled_tolerance(t, 8));
}

}  // namespace

TEST_CASE("pad and its backward op match PyTorch's index rules on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  using M = PadMode;
  const PadCase cases[] = {
      {{2, 3, 4}, {1, 2}, M::constant, Layout::transposed, 1.5},
      {{2, 3, 4}, {1, 1, 2, 0}, M::constant},
      {{2, 3, 4}, {-1, 2, 0, 1}, M::constant, Layout::sliced},
      {{2, 3, 4}, {1, 1, 1, 1, 1, 1}, M::constant, Layout::contiguous, -2},
      {{3}, {-3, 0}, M::constant},
      {{}, {}, M::constant},
      {{1, 2, 5, 6}, {2, 3, 1, 4}, M::reflect, Layout::transposed},
      {{2, 7}, {3, -2}, M::reflect},
      {{1, 1, 3, 4, 5}, {1, 2, 2, 0, 1, 1}, M::reflect},
      {{1, 4}, {2, -5}, M::reflect},
      {{2, 3, 4, 5}, {5, 0, 3, 7}, M::replicate, Layout::sliced},
      {{3, 6}, {-2, 3}, M::replicate},
      {{1, 1, 2, 3, 2}, {2, 1, 0, 2, 3, 1}, M::replicate},
      {{1, 2, 4, 5}, {2, 3, 4, 1}, M::circular, Layout::transposed},
      {{2, 3, 6}, {-1, 2}, M::circular},
      {{2, 3, 4}, {4, 4}, M::circular},
      {{1, 1, 3, 3, 3}, {1, 1, 2, 2, 3, 3}, M::circular},
      {{0, 3, 4}, {1, 1}, M::reflect},
      {{2, 0, 4}, {1, 1, 2, 2}, M::constant},
  };
  for_each_target([&](Device dev) {
    for (const PadCase& c : cases)
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
        CAPTURE(c.shape);
        CAPTURE(Shape(c.pad));
        CAPTURE(ops::pad_mode_name(c.mode));
        CAPTURE(t);
        check_pad(c, t, dev, gen);
      }
    // Constant padding copies integers too.
    CAPTURE(kInt64);
    check_pad({{2, 5}, {2, -1, 1, 1}, M::constant, Layout::transposed, 7}, kInt64, dev, gen);
  });
}

TEST_CASE("pad: typed errors naming the mode, the pads and the sizes on every target") {
  for_each_target([&](Device dev) {
    const Tensor x = zeros({1, 2, 3, 4}, {kFloat32, dev});
    CHECK_THROWS_WITH_AS(pad(x, {1, 1}, "bogus"), doctest::Contains("unknown padding mode 'bogus'"),
                         ValueError);
    CHECK_THROWS_WITH_AS(pad(x, {1, 1}, "bogus"), doctest::Contains("'circular'"), ValueError);
    CHECK_THROWS_WITH_AS(ops::pad(x, {4, 0, 0, 0}, PadMode::reflect),
                         doctest::Contains("less than the dim's size"), ValueError);
    CHECK_THROWS_WITH_AS(ops::pad(x, {0, 0, 3, 0}, PadMode::reflect),
                         doctest::Contains("pads (3, 0) for dim 2 of size 3"), ValueError);
    CHECK_THROWS_AS(ops::pad(x, {1, 1, 1}, PadMode::constant), ValueError);
    CHECK_THROWS_AS(ops::pad(x, std::vector<int64_t>(10, 1), PadMode::constant), ValueError);
    CHECK_THROWS_WITH_AS(ops::pad(x, {5, 0, 0, 0}, PadMode::circular),
                         doctest::Contains("wraps around more than once"), ValueError);
    CHECK_THROWS_AS(ops::pad(x, {1, 1}, PadMode::replicate), ValueError);  // 1 pair on 4-D
    CHECK_THROWS_AS(ops::pad(x, {1, 1, 1, 1}, PadMode::reflect, 2.0), ValueError);
    CHECK_THROWS_AS(ops::pad(x, {-3, -2}, PadMode::constant), ValueError);
    CHECK_THROWS_AS(ops::pad(zeros({2, 3}, {kInt64, dev}), {1, 1}, PadMode::reflect), DTypeError);
  });
}

}  // namespace ember::test

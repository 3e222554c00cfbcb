// Pooling and batch norm on the emu device against the CPU ops run in float64, in every thread
// order: odd shapes, ceil_mode, padding, dilation, strides, adaptive sizes that do not divide the
// input, NaN, empty and non-contiguous inputs; batch norm with and without affine parameters, in
// training (running stats over two steps) and eval, forward and backward; device mixing; and
// gradcheck through autograd on the device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/batch_norm.h"
#include "autograd/functions.h"
#include "autograd/grad_test_util.h"
#include "autograd/gradcheck.h"
#include "autograd/pool2d.h"
#include "cuda/cuda_test_util.h"
#include "ops/batch_norm.h"
#include "ops/elementwise.h"
#include "ops/pool2d.h"

namespace ember::test {

namespace {

Tensor ref64(const Tensor& t) {
  return t.defined() ? t.cpu().to(kFloat64).clone() : t;
}

double rtol_of(DType t) {
  return t == kFloat32 ? 1e-5 : 1e-11;
}
double atol_of(DType t) {
  return t == kFloat32 ? 1e-6 : 1e-12;
}

struct WindowCase {
  Shape x;
  std::array<int64_t, 2> kernel, stride, padding, dilation;
  bool ceil_mode;
};

const std::vector<WindowCase>& window_cases() {
  static const std::vector<WindowCase> c = {
      {{1, 3, 7, 9}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {{2, 5, 7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
      {{1, 7, 13, 11}, {3, 2}, {3, 3}, {1, 1}, {1, 1}, true},
      {{2, 3, 13, 11}, {3, 3}, {1, 2}, {1, 0}, {2, 2}, false},
      {{1, 5, 7, 9}, {2, 3}, {3, 2}, {1, 1}, {2, 1}, true},
      {{1, 3, 4, 4}, {2, 2}, {3, 3}, {1, 1}, {1, 1}, true},
  };
  return c;
}

}  // namespace

TEST_CASE("emu max pooling forward and backward match the cpu in every thread order") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const WindowCase& wc : window_cases()) {
      for (DType t : {kFloat32, kFloat64}) {
        for (Layout l : {Layout::contiguous, Layout::transposed}) {
          CAPTURE(wc.x);
          CAPTURE(t);
          CAPTURE(layout_name(l));
          ops::MaxPool2dParams p;
          p.kernel = wc.kernel, p.stride = wc.stride, p.padding = wc.padding;
          p.dilation = wc.dilation, p.ceil_mode = wc.ceil_mode;
          // Values on a coarse grid: ties, so the first-maximum rule matters.
          const Tensor xh = random_tensor(wc.x, t, -3, 3, g, 0.5);
          const Tensor x = l == Layout::transposed
                               ? xh.transpose(2, 3).contiguous().to(emu()).transpose(2, 3)
                               : xh.to(emu());
          const auto [y, idx] = ops::max_pool2d(x, p);
          const auto [ry, ridx] = ops::max_pool2d(ref64(x), p);
          CHECK(y.device() == emu());
          check_close(y, ry, 0, 0);
          CHECK(idx.to_vector<int64_t>() == ridx.to_vector<int64_t>());
          const Tensor dy = random_operand(y.shape(), t, Layout::contiguous, -1, 1, g, 0.0, emu());
          check_close(ops::max_pool2d_backward(dy, idx, x.shape()),
                      ops::max_pool2d_backward(ref64(dy), ridx, x.shape()), rtol_of(t), atol_of(t));
        }
      }
    }
  }
}

TEST_CASE("emu max pooling propagates NaN with the cpu's index") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    Tensor xc = random_tensor({1, 3, 7, 9}, kFloat32, -1, 1, g);
    std::vector<double> v = xc.to_vector<double>();
    v[10] = v[11] = v[40] = std::nan("");
    xc = from_vector(v, xc.shape()).to(kFloat32);
    ops::MaxPool2dParams p;
    p.kernel = {3, 3}, p.stride = {2, 2}, p.padding = {1, 1}, p.ceil_mode = true;
    const auto [y, idx] = ops::max_pool2d(xc.to(emu()), p);
    const auto [ry, ridx] = ops::max_pool2d(ref64(xc), p);
    check_close(y, ry, 0, 0);
    CHECK(idx.to_vector<int64_t>() == ridx.to_vector<int64_t>());
  }
}

TEST_CASE("emu average pooling forward and backward match the cpu in every thread order") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const WindowCase& wc : window_cases()) {
      for (bool include_pad : {true, false}) {
        for (int64_t divisor : {0, 5}) {
          for (DType t : {kFloat32, kFloat64}) {
            CAPTURE(wc.x);
            CAPTURE(include_pad);
            CAPTURE(divisor);
            CAPTURE(t);
            ops::AvgPool2dParams p;
            p.kernel = wc.kernel, p.stride = wc.stride, p.padding = wc.padding;
            p.ceil_mode = wc.ceil_mode, p.count_include_pad = include_pad;
            p.divisor_override = divisor;
            const Layout l = include_pad ? Layout::transposed : Layout::sliced;
            const Tensor x = random_operand(wc.x, t, l, -2, 2, g, 0.0, emu());
            const Tensor y = ops::avg_pool2d(x, p);
            check_close(y, ops::avg_pool2d(ref64(x), p), rtol_of(t), atol_of(t));
            const Tensor dy = random_operand(y.shape(), t, Layout::transposed, -1, 1, g, 0.0, emu());
            check_close(ops::avg_pool2d_backward(dy, x.shape(), p),
                        ops::avg_pool2d_backward(ref64(dy), x.shape(), p), rtol_of(t), atol_of(t));
          }
        }
      }
    }
  }
}

TEST_CASE("emu adaptive average pooling matches the cpu for sizes that do not divide") {
  std::mt19937 g(fresh_seed());
  const std::vector<std::pair<Shape, std::array<int64_t, 2>>> cases = {{{1, 3, 13, 11}, {5, 3}},
                                                                       {{2, 5, 7, 9}, {3, 4}},
                                                                       {{1, 7, 7, 9}, {1, 1}},
                                                                       {{1, 3, 4, 5}, {7, 9}},
                                                                       {{2, 3, 13, 11}, {13, 11}}};
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const auto& [shape, out] : cases) {
      for (DType t : {kFloat32, kFloat64}) {
        CAPTURE(shape);
        CAPTURE(out[0]);
        CAPTURE(out[1]);
        CAPTURE(t);
        const Tensor x = random_operand(shape, t, Layout::transposed, -2, 2, g, 0.0, emu());
        const Tensor y = ops::adaptive_avg_pool2d(x, out);
        check_close(y, ops::adaptive_avg_pool2d(ref64(x), out), rtol_of(t), atol_of(t));
        const Tensor dy = random_operand(y.shape(), t, Layout::contiguous, -1, 1, g, 0.0, emu());
        check_close(ops::adaptive_avg_pool2d_backward(dy, x.shape()),
                    ops::adaptive_avg_pool2d_backward(ref64(dy), x.shape()), rtol_of(t),
                    atol_of(t));
      }
    }
  }
}

TEST_CASE("emu pooling of empty batches and across devices") {
  const Tensor x = empty({0, 3, 7, 9}, {kFloat32, emu()});
  ops::MaxPool2dParams mp;
  mp.kernel = {2, 2};
  const auto [y, idx] = ops::max_pool2d(x, mp);
  CHECK(y.shape() == Shape{0, 3, 3, 4});
  CHECK(y.device() == emu());
  CHECK(idx.device() == emu());
  CHECK(ops::max_pool2d_backward(y, idx, x.shape()).shape() == x.shape());
  ops::AvgPool2dParams ap;
  ap.kernel = {3, 3};
  CHECK(ops::avg_pool2d(x, ap).shape() == Shape{0, 3, 2, 3});
  CHECK(ops::adaptive_avg_pool2d(x, {5, 3}).shape() == Shape{0, 3, 5, 3});
  CHECK(ops::adaptive_avg_pool2d_backward(empty({0, 3, 5, 3}, {kFloat32, emu()}), x.shape())
            .shape() == x.shape());

  std::mt19937 g(fresh_seed());
  const Tensor xe = random_tensor({1, 2, 4, 4}, kFloat32, -1, 1, g).to(emu());
  const auto [ye, ie] = ops::max_pool2d(xe, mp);
  try {
    ops::max_pool2d_backward(ye, ie.cpu(), xe.shape());
    FAIL("expected a DeviceError");
  } catch (const DeviceError& e) {
    check_message(e.what(), {"max_pool2d_backward", "cpu", emu().str()});
  }
}

namespace {

struct BnCase {
  Shape x;
  bool affine;
};

double max_abs(const Tensor& t) {
  double m = 1.0;
  if (t.defined())
    for (double v : t.to_vector<double>()) m = std::max(m, std::abs(v));
  return m;
}

// Runs batch norm forward and backward for one case on `x` and, in float64 on the cpu, on
// copies, with two training steps (running stats compared after each) and an eval step.
// Tolerances: the statistics accumulate in double; the outputs are computed in x's dtype as
// x * scale + shift (as on the cpu), which rounds at the size of |x| * invstd, and dx at that
// times invstd.
void check_batch_norm(const Tensor& x, bool affine, std::mt19937& g) {
  const DType t = x.dtype();
  const double rtol = rtol_of(t), unit = t == kFloat32 ? 1e-6 : 1e-13;
  const int64_t c = x.size(1);
  Tensor w, b;
  if (affine) {
    w = random_tensor({c}, t, 0.5, 2, g).to(emu());
    b = random_tensor({c}, t, -1, 1, g).to(emu());
  }
  Tensor rm = random_tensor({c}, t, -0.5, 0.5, g).to(emu());
  Tensor rv = random_tensor({c}, t, 0.5, 2, g).to(emu());
  Tensor rrm = ref64(rm), rrv = ref64(rv);
  for (int step = 0; step < 3; ++step) {
    const bool training = step < 2;
    CAPTURE(training);
    const Tensor xs = step == 1 ? ops::mul(x, 1.5) : x;
    const ops::BatchNormOutput got = ops::batch_norm(xs, w, b, rm, rv, training, 0.1, 1e-5);
    const ops::BatchNormOutput want =
        ops::batch_norm(ref64(xs), ref64(w), ref64(b), rrm, rrv, training, 0.1, 1e-5);
    const double invstd = max_abs(want.save_invstd);
    const double atol = unit * max_abs(xs) * invstd * max_abs(w) * 4;
    CHECK(got.out.device() == emu());
    check_close(got.out, want.out, rtol, atol);
    check_close(got.save_mean, want.save_mean, rtol, unit);
    check_close(got.save_invstd, want.save_invstd, rtol * 10, unit);
    check_close(rm, rrm, rtol, unit);
    check_close(rv, rrv, rtol, unit);

    const Tensor dy = random_operand(x.shape(), t, Layout::contiguous, -1, 1, g, 0.0, emu());
    for (bool all : {true, false}) {
      CAPTURE(all);
      const ops::BatchNormGrads gg = ops::batch_norm_backward(
          dy, xs, w, got.save_mean, got.save_invstd, training, true, all && affine, all && affine);
      const ops::BatchNormGrads wg =
          ops::batch_norm_backward(ref64(dy), ref64(xs), ref64(w), want.save_mean, want.save_invstd,
                                   training, true, all && affine, all && affine);
      check_close(gg.grad_input, wg.grad_input, rtol, atol * invstd);
      if (all && affine) {
        check_close(gg.grad_weight, wg.grad_weight, rtol, atol);
        check_close(gg.grad_bias, wg.grad_bias, rtol, unit);
      } else {
        CHECK_FALSE(gg.grad_weight.defined());
      }
    }
  }
}

}  // namespace

TEST_CASE("emu batch norm in training and eval matches the cpu in every thread order") {
  std::mt19937 g(fresh_seed());
  // [3, 5, 33, 35] and [2, 3, 40, 40] split each channel over several blocks; 40x40 planes
  // read vectors.
  const std::vector<BnCase> cases = {
      {{1, 3, 7, 9}, true},   {{2, 5, 13, 11}, false}, {{6, 7}, true},       {{4, 3, 5}, false},
      {{3, 5, 33, 35}, true}, {{2, 3, 40, 40}, true},  {{2, 3, 1, 1}, false}};
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const BnCase& bc : cases) {
      for (DType t : {kFloat32, kFloat64}) {
        CAPTURE(bc.x);
        CAPTURE(bc.affine);
        CAPTURE(t);
        // An offset from the mean, so the statistics need more than a naive sum of squares.
        const Tensor x =
            ops::add(random_operand(bc.x, t, Layout::contiguous, -1, 3, g, 0.0, emu()), 100.0);
        check_batch_norm(x, bc.affine, g);
      }
    }
  }
}

TEST_CASE("emu batch norm on a non-contiguous and a misaligned input") {
  std::mt19937 g(fresh_seed());
  for (DType t : {kFloat32, kFloat64}) {
    CAPTURE(t);
    // A transposed view and a contiguous view one element into its storage (no vector loads).
    const Tensor xt = random_operand({2, 3, 8, 12}, t, Layout::transposed, -2, 2, g, 0.0, emu());
    const Tensor flat =
        random_operand({2 * 3 * 8 * 12 + 1}, t, Layout::contiguous, -2, 2, g, 0.0, emu());
    const Tensor xm = flat.slice(0, 1, flat.numel()).view({2, 3, 8, 12});
    for (const Tensor& x : {xt, xm}) {
      const ops::BatchNormOutput got = ops::batch_norm(x, {}, {}, {}, {}, true, 0.1, 1e-5);
      const ops::BatchNormOutput want = ops::batch_norm(ref64(x), {}, {}, {}, {}, true, 0.1, 1e-5);
      check_close(got.out, want.out, rtol_of(t) * 2, atol_of(t) * 10);
      const ops::BatchNormGrads gg = ops::batch_norm_backward(
          x, x, {}, got.save_mean, got.save_invstd, true, true, false, false);
      const ops::BatchNormGrads wg = ops::batch_norm_backward(
          ref64(x), ref64(x), {}, want.save_mean, want.save_invstd, true, true, false, false);
      check_close(gg.grad_input, wg.grad_input, rtol_of(t) * 2, atol_of(t) * 10);
    }
  }
}

TEST_CASE("emu batch norm: empty input, one value per channel, devices") {
  Tensor rm = zeros({3}, {kFloat32, emu()}), rv = ones({3}, {kFloat32, emu()});
  const Tensor e = empty({0, 3, 4, 4}, {kFloat32, emu()});
  const ops::BatchNormOutput r = ops::batch_norm(e, {}, {}, rm, rv, true, 0.1, 1e-5);
  CHECK(r.out.shape() == e.shape());
  CHECK(r.save_mean.to_vector<double>() == std::vector<double>(3, 0.0));
  CHECK(rv.to_vector<double>() == std::vector<double>(3, 1.0));
  const ops::BatchNormGrads gr =
      ops::batch_norm_backward(e, e, {}, r.save_mean, r.save_invstd, true, true, false, false);
  CHECK(gr.grad_input.shape() == e.shape());

  // One value per channel: an error in training, as on the cpu; fine in eval.
  const Tensor one = ones({1, 3, 1, 1}, {kFloat32, emu()});
  CHECK_THROWS_AS(ops::batch_norm(one, {}, {}, rm, rv, true, 0.1, 1e-5), ValueError);
  CHECK_THROWS_AS(ops::batch_norm(one.cpu(), {}, {}, rm.cpu(), rv.cpu(), true, 0.1, 1e-5),
                  ValueError);
  check_close(ops::batch_norm(one, {}, {}, rm, rv, false, 0.1, 1e-5).out,
              ops::batch_norm(ref64(one), {}, {}, ref64(rm), ref64(rv), false, 0.1, 1e-5).out, 1e-6,
              1e-6);

  try {
    ops::batch_norm(one, ones({3}, kFloat32), {}, rm, rv, false, 0.1, 1e-5);
    FAIL("expected a DeviceError");
  } catch (const DeviceError& err) {
    check_message(err.what(), {"batch_norm", "cpu", emu().str()});
  }
  CHECK_THROWS_AS(ops::batch_norm_backward(one.cpu(), one, {}, r.save_mean, r.save_invstd, true,
                                           true, false, false),
                  DeviceError);
}

namespace {

Tensor device_leaf(const Tensor& host) {
  Tensor t = host.to(emu());
  requires_grad_(t);
  return t;
}

}  // namespace

TEST_CASE("emu gradcheck of pooling and batch norm through autograd") {
  std::mt19937 g(fresh_seed());
  using V = const std::vector<Tensor>&;
  expect_gradcheck([](V v) { return max_pool2d(v[0], 3, 2, 1, 1, true); },
                   {device_leaf(distinct_values({1, 2, 6, 7}, g))});
  expect_gradcheck([](V v) { return max_pool2d(v[0], 2, 3, 1, 2, true); },
                   {device_leaf(distinct_values({1, 1, 7, 6}, g))});
  expect_gradcheck([](V v) { return avg_pool2d(v[0], 3, 2, 1, true, false); },
                   {device_leaf(random_tensor({1, 2, 6, 7}, kFloat64, -1, 1, g))});
  expect_gradcheck([](V v) { return avg_pool2d(v[0], 2, 2, 1, true, true); },
                   {device_leaf(random_tensor({1, 1, 5, 6}, kFloat64, -1, 1, g))});
  expect_gradcheck(
      [](V v) {
        return adaptive_avg_pool2d(v[0], {5, 3});
      },
      {device_leaf(random_tensor({1, 1, 13, 11}, kFloat64, -1, 1, g))});
  const Tensor rm = zeros({3}, {kFloat64, emu()}), rv = ones({3}, {kFloat64, emu()});
  expect_gradcheck(
      [&](V v) {
        // Weighted, so the gradient is not the zero that sum(batch_norm(x)) would give.
        const Tensor y = batch_norm(v[0], v[1], v[2], rm, rv, true, 0.1, 1e-5);
        return mul(y, v[3]);
      },
      {device_leaf(random_tensor({2, 3, 2, 3}, kFloat64, -1, 1, g)),
       device_leaf(random_tensor({3}, kFloat64, 0.5, 2, g)),
       device_leaf(random_tensor({3}, kFloat64, -1, 1, g)),
       device_leaf(random_tensor({2, 3, 2, 3}, kFloat64, -1, 1, g))});
}

}  // namespace ember::test

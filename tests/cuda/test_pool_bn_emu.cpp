// Pooling and batch norm on the emu device (cuda:0 in the `gpu` executable) beyond their values,
// which tests/spec checks on every target: empty batches, device mixing, and gradcheck through
// autograd on the device.
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

namespace {}  // namespace

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

TEST_CASE("emu batch norm across devices") {
  Tensor rm = zeros({3}, {kFloat32, emu()}), rv = ones({3}, {kFloat32, emu()});
  const Tensor one = ones({1, 3, 1, 1}, {kFloat32, emu()});
  const ops::BatchNormOutput r = ops::batch_norm(one, {}, {}, rm, rv, false, 0.1, 1e-5);
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

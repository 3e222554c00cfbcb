// Pooling's bad input: typed errors naming the op and the shapes. The values of every pooling op
// on every device are checked by tests/spec/pool2d.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "op_test_util.h"
#include "ops/pool2d.h"

using namespace ember;
using namespace ember::test;

TEST_CASE("pool2d: bad input raises typed errors naming the op and shapes") {
  const Tensor x = ones({2, 3, 6, 6});
  ops::MaxPool2dParams mp;
  mp.kernel = {2, 2};
  CHECK_THROWS_AS(ops::max_pool2d(ones({3, 6, 6}), mp), ShapeError);
  try {
    ops::max_pool2d(ones({3, 6, 6}), mp);
  } catch (const ShapeError& e) {
    check_message(e.what(), {"max_pool2d", "[3, 6, 6]"});
  }
  mp.kernel = {7, 7};
  try {
    ops::max_pool2d(x, mp);
    FAIL("expected a ShapeError");
  } catch (const ShapeError& e) {
    check_message(e.what(), {"max_pool2d", "[2, 3, 6, 6]", "too small"});
  }
  mp.kernel = {2, 2}, mp.padding = {2, 2};
  CHECK_THROWS_AS(ops::max_pool2d(x, mp), ValueError);  // padding above half the kernel
  mp.padding = {0, 0}, mp.stride = {-1, 1};
  CHECK_THROWS_AS(ops::max_pool2d(x, mp), ValueError);
  mp.stride = {0, 0}, mp.dilation = {0, 1};
  CHECK_THROWS_AS(ops::max_pool2d(x, mp), ValueError);
  ops::AvgPool2dParams ap;
  ap.kernel = {0, 2};
  CHECK_THROWS_AS(ops::avg_pool2d(x, ap), ValueError);
  ap.kernel = {2, 2};
  CHECK_THROWS_AS(ops::avg_pool2d(x.to(kInt64), ap), DTypeError);
  CHECK_THROWS_AS(ops::avg_pool2d_backward(ones({2, 3, 2, 3}), x.shape(), ap), ShapeError);
  CHECK_THROWS_AS(ops::adaptive_avg_pool2d(x, {0, 2}), ValueError);
  // Operands on two devices (the kernels of each device are tested in tests/cuda).
  const Tensor ie = fake_device_tensor({2, 3, 3, 3}, kInt64, Device(DeviceType::EMU, 0));
  try {
    ops::max_pool2d_backward(ones({2, 3, 3, 3}), ie, x.shape());
    FAIL("expected a DeviceError");
  } catch (const DeviceError& e) {
    check_message(e.what(), {"max_pool2d_backward", "cpu", "emu:0"});
  }
}

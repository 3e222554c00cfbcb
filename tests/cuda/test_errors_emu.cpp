// Bad input to the GPU kernels' ops on the emu device (cuda:0 in the `gpu` executable): mixed
// devices raise DeviceError naming both, dtypes the GPU kernels lack raise DTypeError, and empty
// reductions that have no identity raise ValueError, before any kernel runs.
#include <doctest/doctest.h>

#include "cuda/cuda_test_util.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace ember::test {

TEST_CASE("emu elementwise ops reject mixed devices and dtypes without GPU kernels") {
  const Tensor a = ones({3}, {kFloat32, emu()}), c = ones({3});
  CHECK_THROWS_AS(ops::add(a, c), DeviceError);
  try {
    (void)ops::mul(c, a);
    FAIL("no DeviceError");
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("cpu") != std::string::npos);
    CHECK(msg.find(emu().str()) != std::string::npos);
  }
  CHECK_THROWS_AS(ops::where(ops::gt(a, a), a, c), DeviceError);
  const Tensor u = ones({3}, {kUInt8, emu()});
  CHECK_THROWS_AS(ops::add(u, u), DTypeError);
  CHECK_THROWS_AS(ops::maximum(ops::gt(a, a), ops::gt(a, a)), DTypeError);
}

TEST_CASE("emu reductions and matmul reject mixed devices") {
  const Tensor a = ones({2, 2}, {kFloat32, emu()}), c = ones({2, 2});
  CHECK_THROWS_AS(ops::matmul(a, c), DeviceError);
  CHECK_THROWS_AS(ops::bmm(c.unsqueeze(0), a.unsqueeze(0)), DeviceError);
  CHECK_THROWS_AS(
      ops::mse_loss(ones({2}, {kFloat16, emu()}), ones({2}, {kFloat32, emu()}), Reduction::Mean),
      DTypeError);
  CHECK_THROWS_AS(ops::mean(ones({2}, {kInt32, emu()})), DTypeError);
  CHECK_THROWS_AS(ops::amax(zeros({0}, {kFloat32, emu()})), ValueError);
}

}  // namespace ember::test

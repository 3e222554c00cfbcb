// Bad input raises the documented ember::Error subtype, with a message naming the op and what
// was expected and found.
#include <doctest/doctest.h>

#include "op_test_util.h"
#include "ops/activation.h"
#include "ops/batch_norm.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

using namespace ember;
using namespace ember::test;

namespace {
template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("wrong exception type");
    return e.what();
  }
  FAIL_CHECK("no exception");
  return "";
}
}  // namespace

TEST_CASE("shapes that do not broadcast raise ShapeError naming both shapes") {
  const Tensor a = zeros({2, 3}), b = zeros({4});
  CHECK_THROWS_AS(ops::add(a, b), ShapeError);
  check_message(error_of<ShapeError>([&] { ops::add(a, b); }), {"add", "[2, 3]", "[4]"});
  check_message(error_of<ShapeError>([&] { ops::lt(b, a); }), {"lt", "[4]", "[2, 3]"});
  check_message(error_of<ShapeError>([&] { ops::where(ones({2, 3}, kBool), a, b); }),
                {"where", "[2, 3]", "[4]"});
  CHECK_THROWS_AS(ops::broadcast_shapes({3, 2}, {2, 3}, "test"), ShapeError);
}

TEST_CASE("mixed devices and devices without kernels raise DeviceError") {
  const Tensor c = zeros({2, 3});
  const Tensor e = fake_device_tensor({2, 3}, kFloat32, Device(DeviceType::EMU, 0));
  const Tensor g = fake_device_tensor({2, 3}, kFloat32, Device(DeviceType::CUDA, 0));
  CHECK_THROWS_AS(ops::add(c, e), DeviceError);
  check_message(error_of<DeviceError>([&] { ops::add(c, e); }), {"add", "cpu", "emu:0"});
  check_message(error_of<DeviceError>([&] { ops::matmul(g, c.t()); }), {"matmul", "cuda:0", "cpu"});
  check_message(error_of<DeviceError>([&] { ops::sum(ops::mul(e, c)); }), {"mul", "emu:0", "cpu"});
  // Activations and softmax have GPU kernels (tests/cuda), so only mixing devices fails.
  check_message(error_of<DeviceError>([&] { ops::relu_backward(c, e); }),
                {"relu_backward", "cpu", "emu:0"});
  check_message(error_of<DeviceError>([&] { ops::softmax_backward(g, c, 1); }),
                {"softmax_backward", "cuda:0", "cpu"});
}

TEST_CASE("unsupported dtypes raise DTypeError naming the dtype") {
  const Tensor h = zeros({2, 2}, kFloat16), f = zeros({2, 2}), i = zeros({2, 2}, kInt32);
  const Tensor b = zeros({2, 2}, kBool);
  check_message(error_of<DTypeError>([&] { ops::mse_loss(h, f, Reduction::Mean); }),
                {"mse_loss", "float16", "float32"});
  check_message(error_of<DTypeError>([&] { ops::mse_loss(i, i, Reduction::Mean); }),
                {"mse_loss", "int32"});
  check_message(error_of<DTypeError>([&] { ops::sub(b, b); }), {"sub", "bool"});
  check_message(error_of<DTypeError>([&] { ops::neg(b); }), {"neg", "bool"});
  check_message(error_of<DTypeError>([&] { ops::mean(i); }), {"mean", "int32", "float32"});
  check_message(error_of<DTypeError>([&] { ops::var(b); }), {"var", "bool"});
  check_message(error_of<DTypeError>([&] { ops::matmul(i, i); }), {"matmul", "int32"});
  check_message(error_of<DTypeError>([&] { ops::matmul(f, f.to(kFloat64)); }),
                {"matmul", "float32", "float64"});
  check_message(error_of<DTypeError>([&] { ops::where(i, f, f); }), {"where", "bool", "int32"});
  const Tensor bh = zeros({2, 2}, kBFloat16);
  // A half input takes float32 parameters (autocast's mixed precision), but not float64 ones.
  const Tensor w64 = zeros({2}, kFloat64);
  check_message(error_of<DTypeError>([&] {
                  ops::batch_norm(bh, w64, Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5);
                }),
                {"batch_norm", "weight", "bfloat16 or float32", "float64"});
}

TEST_CASE("reductions over a missing dim raise IndexError naming the shape") {
  const Tensor a = zeros({2, 3});
  CHECK_THROWS_AS(ops::sum(a, {2}), IndexError);
  check_message(error_of<IndexError>([&] { ops::sum(a, {2}); }), {"sum", "[2, 3]", "2"});
  check_message(error_of<IndexError>([&] { ops::mean(a, {-3}); }), {"mean", "[2, 3]", "-3"});
  check_message(error_of<IndexError>([&] { ops::argmax(a, 5); }), {"argmax", "[2, 3]", "5"});
  check_message(error_of<ValueError>([&] { ops::sum(a, {1, -1}); }), {"sum", "[2, 3]", "more than once"});
}

TEST_CASE("max/min of an empty reduction raise ValueError") {
  const Tensor e = zeros({0, 3});
  check_message(error_of<ValueError>([&] { ops::amax(e, {0}); }), {"amax", "[0, 3]", "empty"});
  check_message(error_of<ValueError>([&] { ops::argmin(e); }), {"argmin", "[0, 3]"});
  CHECK(ops::amax(e, {1}).shape() == Shape{0});  // nothing to reduce into: fine
}

TEST_CASE("matmul with mismatched inner sizes raises ShapeError naming both shapes") {
  CHECK_THROWS_AS(ops::matmul(zeros({2, 3}), zeros({4, 5})), ShapeError);
  check_message(error_of<ShapeError>([&] { ops::matmul(zeros({2, 3}), zeros({4, 5})); }),
                {"matmul", "[2, 3]", "[4, 5]", "3", "4"});
  check_message(error_of<ShapeError>([&] { ops::matmul(zeros({3}), zeros({4})); }),
                {"matmul", "[3]", "[4]"});
  check_message(error_of<ShapeError>([&] { ops::matmul(zeros({2, 2, 3}), zeros({3, 3, 1})); }),
                {"matmul", "[2, 2, 3]", "[3, 3, 1]", "broadcast"});
  check_message(error_of<ShapeError>([&] { ops::matmul(zeros({}), zeros({3})); }), {"matmul", "[]"});
  check_message(error_of<ShapeError>([&] { ops::mm(zeros({2, 3, 4}), zeros({4, 2})); }),
                {"mm", "2-D", "[2, 3, 4]"});
  check_message(error_of<ShapeError>([&] { ops::bmm(zeros({2, 3, 4}), zeros({3, 4, 2})); }),
                {"bmm", "[2, 3, 4]", "[3, 4, 2]"});
}

TEST_CASE("clamp with a NaN bound raises ValueError") {
  check_message(error_of<ValueError>([&] { ops::clamp(zeros({2}), std::nan(""), 1.0); }),
                {"clamp", "NaN"});
}

// Every bad input of the NN ops raising a typed error that names the op. (The losses' values
// are op specs: tests/spec/loss.cpp.)
#include <doctest/doctest.h>

#include "autograd/activation.h"
#include "autograd/batch_norm.h"
#include "autograd/dropout.h"
#include "autograd/linear.h"
#include "autograd/loss.h"
#include "autograd/softmax.h"
#include "op_test_util.h"
#include "ops/dropout.h"

using namespace ember;
using namespace ember::test;

TEST_CASE("nn ops reject bad input with typed errors naming the op") {
  auto expect = [](auto&& f, auto tag, std::initializer_list<std::string> parts) {
    using E = decltype(tag);
    try {
      f();
      FAIL("no exception");
    } catch (const E& e) {
      check_message(e.what(), parts);
    }
  };
  Tensor x4 = zeros({2, 3, 4, 5});
  Tensor c3 = ones({3}), c4 = ones({4});
  // batch_norm
  expect([&] { batch_norm(zeros({3}), c3, c3, c3, c3, true); }, ShapeError{""},
         {"batch_norm", "[N, C, ...]", "[3]"});
  expect([&] { batch_norm(x4, c4, c3, c3, c3, true); }, ShapeError{""},
         {"batch_norm", "weight", "[3]", "[4]"});
  expect([&] { batch_norm(x4, c3, c4, c3, c3, true); }, ShapeError{""}, {"bias", "[4]"});
  expect([&] { batch_norm(x4, c3, c3, c4, c3, true); }, ShapeError{""}, {"running_mean", "[4]"});
  expect([&] { batch_norm(x4, c3, c3, c3, c4, false); }, ShapeError{""}, {"running_var", "[4]"});
  expect([&] { batch_norm(x4, c3.to(kFloat64), c3, c3, c3, true); }, DTypeError{""},
         {"batch_norm", "float32", "float64"});
  expect([&] { batch_norm(x4.to(kInt64), Tensor(), Tensor(), c3, c3, true); }, DTypeError{""},
         {"batch_norm", "int64"});
  expect([&] { batch_norm(x4, Tensor(), Tensor(), Tensor(), Tensor(), false); }, ValueError{""},
         {"batch_norm", "running_mean"});
  expect(
      [&] {
        batch_norm(zeros({1, 3}), Tensor(), Tensor(), c3, c3, true);
      },
      ValueError{""}, {"batch_norm", "more than 1 value per channel"});
  Tensor emu = fake_device_tensor({3}, kFloat32, Device(DeviceType::EMU, 0));
  expect([&] { batch_norm(x4, emu, Tensor(), c3, c3, true); }, DeviceError{""},
         {"batch_norm", "cpu", "emu"});
  // activations, softmax, dropout
  expect([&] { relu(zeros({2}, kInt64)); }, DTypeError{""}, {"relu", "int64"});
  expect([&] { gelu(zeros({2}), "exact"); }, ValueError{""}, {"gelu", "exact"});
  expect([&] { softmax(zeros({2, 3}), 2); }, IndexError{""}, {"softmax"});
  expect([&] { log_softmax(zeros({2}, kInt32), 0); }, DTypeError{""}, {"log_softmax", "int32"});
  expect([&] { dropout(zeros({2}), 1.5); }, ValueError{""}, {"dropout", "1.5"});
  expect([&] { dropout(zeros({2}), -0.1); }, ValueError{""}, {"dropout", "-0.1"});
  expect(
      [&] {
        ops::dropout_backward(zeros({2}),
                              fake_device_tensor({2}, kBool, Device(DeviceType::EMU, 0)), 0.5);
      },
      DeviceError{""}, {"dropout_backward", "cpu", "emu"});
  // linear
  expect(
      [&] {
        linear(zeros({2, 5}), zeros({3, 4}));
      },
      ShapeError{""}, {"linear", "5 features", "[3, 4]"});
  expect(
      [&] {
        linear(zeros({2, 4}), zeros({3, 4}), zeros({2}));
      },
      ShapeError{""}, {"linear", "bias", "[3]", "[2]"});
  expect([&] { linear(zeros({2, 4}), zeros({4})); }, ShapeError{""}, {"linear", "[out, in]"});
  expect(
      [&] {
        linear(zeros({2, 4}), zeros({3, 4}, kFloat64));
      },
      DTypeError{""}, {"linear", "float32", "float64"});
  // losses
  Tensor logits = zeros({2, 5, 3});
  Tensor target = from_vector<int64_t>({0, 1, 2, 3, 4, 0}, {2, 3});
  expect([&] { cross_entropy(zeros({5}), from_vector<int64_t>({0})); }, ShapeError{""},
         {"cross_entropy", "[N, C]", "[5]"});
  expect([&] { cross_entropy(logits, target.to(kInt32)); }, DTypeError{""},
         {"cross_entropy", "int64", "int32"});
  expect(
      [&] {
        cross_entropy(logits, zeros({2, 4}, kInt64));
      },
      ShapeError{""}, {"cross_entropy", "[2, 3]", "[2, 4]"});
  Tensor bad = from_vector<int64_t>({0, 1, 2, 3, 7, 0}, {2, 3});
  expect([&] { cross_entropy(logits, bad); }, IndexError{""},
         {"cross_entropy", "target 7", "[1, 1]", "5 classes"});
  expect(
      [&] {
        nll_loss(logits, from_vector<int64_t>({0, -1, 2, 3, 4, 0}, {2, 3}));
      },
      IndexError{""}, {"nll_loss", "target -1", "[0, 1]", "5 classes"});
  expect([&] { cross_entropy(logits, target, -100, Reduction::Mean, 1.5); }, ValueError{""},
         {"cross_entropy", "label_smoothing", "1.5"});
  expect(
      [&] {
        mse_loss(zeros({2, 3}), zeros({3, 2}));
      },
      ShapeError{""}, {"mse_loss", "[2, 3]", "[3, 2]"});
  expect([&] { mse_loss(zeros({2}), zeros({2}, kFloat64)); }, DTypeError{""},
         {"mse_loss", "float32", "float64"});
  expect(
      [&] { mse_loss(zeros({2}), fake_device_tensor({2}, kFloat32, Device(DeviceType::EMU, 0))); },
      DeviceError{""}, {"mse_loss", "emu"});
}

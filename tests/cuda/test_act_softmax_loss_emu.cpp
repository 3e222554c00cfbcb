// Dropout on the emu device draws the cpu's mask bit for bit in every thread order (the
// contract: one Philox stream for every device); device-mixing errors of the activations,
// softmax, losses, dropout and linear; gradcheck through autograd on the device. (The values of
// the activations, softmax, losses and linear are op specs: tests/spec.)
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "autograd/activation.h"
#include "autograd/dropout.h"
#include "autograd/functions.h"
#include "autograd/grad_test_util.h"
#include "autograd/gradcheck.h"
#include "autograd/linear.h"
#include "autograd/loss.h"
#include "autograd/softmax.h"
#include "cuda/cuda_test_util.h"
#include "ops/activation.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/loss.h"
#include "ops/softmax.h"

namespace ember::test {

namespace {

// An activation through autograd, for gradcheck.
struct Act {
  const char* name;
  std::function<Tensor(const Tensor&)> differentiable;
};

std::vector<Act> acts() {
  using G = GeluApproximate;
  return {
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return ember::tanh(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x, G::None); }},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, G::Tanh); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"elu", [](const Tensor& x) { return elu(x, 1.5); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }},
      {"softplus beta=2 threshold=3", [](const Tensor& x) { return softplus(x, 2.0, 3.0); }},
  };
}

const Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

// A float64 leaf on the device with values in [lo, hi].
Tensor leaf(const Shape& s, double lo, double hi, std::mt19937& g) {
  Tensor t = random_tensor(s, kFloat64, lo, hi, g).to(emu());
  requires_grad_(t);
  return t;
}

void expect_device_error(const std::function<void()>& f) {
  try {
    f();
    FAIL("no DeviceError");
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("cpu") != std::string::npos);
    CHECK(msg.find(emu().str()) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("emu dropout draws the cpu's mask bit for bit") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16})
      for (const Shape& shape : {Shape{1}, Shape{3}, Shape{37, 41}, Shape{0, 2}})
        for (double p : {0.1, 0.5, 0.8}) {
          CAPTURE(t);
          CAPTURE(shape);
          CAPTURE(p);
          const Tensor x = random_operand(shape, t, Layout::transposed, -2, 2, g, 0.0, emu());
          Generator gen(seed), cpu_gen(seed);
          gen.set_state(seed, 11);
          cpu_gen.set_state(seed, 11);
          const ops::DropoutOutput got = ops::dropout(x, p, true, &gen);
          const ops::DropoutOutput want = ops::dropout(x.cpu(), p, true, &cpu_gen);
          CHECK(gen.offset() == cpu_gen.offset());
          CHECK(got.mask.device() == emu());
          CHECK(got.mask.to_vector<bool>() == want.mask.to_vector<bool>());
          check_close(got.out, want.out.to(kFloat64), 0, 0);
          const Tensor go = random_operand(shape, t, Layout::contiguous, -1, 1, g, 0.0, emu());
          check_close(ops::dropout_backward(go, got.mask, p),
                      ops::dropout_backward(go.cpu(), want.mask, p).to(kFloat64), 0, 0);
        }
  }
  // p = 0 and eval return x itself, p = 1 zeros on the device; none of them draws.
  Generator gen(seed);
  const Tensor x = ones({5, 3}, {kFloat32, emu()});
  const uint64_t before = gen.offset();
  CHECK(ops::dropout(x, 0.0, true, &gen).out.is_same(x));
  CHECK(ops::dropout(x, 0.5, false, &gen).out.is_same(x));
  const ops::DropoutOutput zero = ops::dropout(x, 1.0, true, &gen);
  CHECK(zero.out.device() == emu());
  CHECK(!zero.mask.defined());
  check_close(zero.out, zeros({5, 3}, kFloat64), 0, 0);
  CHECK(gen.offset() == before);
}

TEST_CASE("emu activations, softmax, losses, dropout and linear reject mixed devices") {
  const Tensor d = ones({2, 3}, {kFloat32, emu()}), c = ones({2, 3});
  const Tensor td = from_vector<int64_t>({0, 1}).to(emu()), tc = from_vector<int64_t>({0, 1});
  expect_device_error([&] { (void)ops::relu_backward(c, d); });
  expect_device_error([&] { (void)ops::sigmoid_backward(d, c); });
  expect_device_error([&] { (void)ops::softmax_backward(c, d, 1); });
  expect_device_error([&] { (void)ops::log_softmax_backward(d, c, 0); });
  expect_device_error([&] { (void)ops::cross_entropy(d, tc, -100, Reduction::Mean, 0.0); });
  expect_device_error([&] { (void)ops::nll_loss(c, td, -100, Reduction::Mean); });
  expect_device_error(
      [&] { (void)ops::cross_entropy_backward(ones({}), d, td, -100, Reduction::Mean, 0.0, 2); });
  expect_device_error([&] { (void)ops::mse_loss(d, c, Reduction::Sum); });
  expect_device_error([&] { (void)ops::mse_loss_backward(ones({}), d, d, Reduction::Sum); });
  expect_device_error([&] { (void)ops::dropout_backward(d, ops::gt(c, zeros({})), 0.5); });
  expect_device_error([&] { (void)ops::linear(d, ones({4, 3}), Tensor()); });
  expect_device_error([&] { (void)ops::linear(d, ones({4, 3}, {kFloat32, emu()}), ones({4})); });
  expect_device_error([&] { (void)ops::linear_backward(c, d, ones({3, 3}), true, true, true); });
}

TEST_CASE("emu gradcheck through autograd: activations, softmax, losses, linear") {
  std::mt19937 g(fresh_seed());
  using V = const std::vector<Tensor>&;
  for (const Act& a : acts()) {
    CAPTURE(std::string(a.name));
    // Values away from the kinks of relu, leaky_relu and elu at 0.
    Tensor x = random_tensor({2, 3}, kFloat64, 0.1, 2.5, g);
    x = ops::mul(x, from_vector<double>({1, -1, 1}, {3})).to(emu());
    requires_grad_(x);
    expect_gradcheck([&](V v) { return a.differentiable(v[0]); }, {x});
  }
  for (int64_t dim : {0, 1, 2}) {
    CAPTURE(dim);
    expect_gradcheck([dim](V v) { return softmax(v[0], dim); }, {leaf({2, 3, 2}, -2, 2, g)});
    expect_gradcheck([dim](V v) { return log_softmax(v[0], dim); }, {leaf({2, 3, 2}, -2, 2, g)});
  }
  const Tensor target = from_vector<int64_t>({2, -100, 0}).to(emu());
  const Tensor target2 = from_vector<int64_t>({1, 0, 3, 2}, {2, 2}).to(emu());
  for (Reduction r : kReductions) {
    CAPTURE(static_cast<int>(r));
    expect_gradcheck([&](V v) { return cross_entropy(v[0], target, -100, r, 0.15); },
                     {leaf({3, 4}, -2, 2, g)});
    expect_gradcheck([&](V v) { return cross_entropy(v[0], target2, -100, r, 0.0); },
                     {leaf({2, 4, 2}, -2, 2, g)});
    expect_gradcheck([&](V v) { return nll_loss(v[0], target, -100, r); },
                     {leaf({3, 4}, -2, 0, g)});
    expect_gradcheck([&](V v) { return mse_loss(v[0], v[1], r); },
                     {leaf({2, 3}, -1, 1, g), leaf({2, 3}, -1, 1, g)});
  }
  expect_gradcheck([](V v) { return linear(v[0], v[1], v[2]); },
                   {leaf({2, 3}, -1, 1, g), leaf({4, 3}, -1, 1, g), leaf({4}, -1, 1, g)});
  expect_gradcheck([](V v) { return linear(v[0], v[1]); },
                   {leaf({1, 2, 1}, -1, 1, g), leaf({3, 1}, -1, 1, g)});
  // Dropout's backward reuses the forward's mask: the same seed draws it again each call.
  expect_gradcheck(
      [](V v) {
        Generator gen(5);
        return dropout(v[0], 0.4, true, &gen);
      },
      {leaf({3, 5}, -1, 1, g)});
}

}  // namespace ember::test

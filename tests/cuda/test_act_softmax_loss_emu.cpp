// Activations, softmax, losses, dropout and linear on the emu device against the CPU ops in
// float64, in every thread order: odd and empty shapes, non-contiguous and unaligned inputs,
// extreme logits, every reduction of the losses, the dropout mask bit for bit, device-mixing
// errors, and gradcheck through autograd on the device.
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

double tol(DType t) {
  return t == kFloat32 ? 1e-5 : 1e-11;
}
double atol(DType t) {
  return t == kFloat32 ? 1e-6 : 1e-13;
}

// The float64 cpu copy of a device tensor: the reference's input.
Tensor ref(const Tensor& t) {
  return t.cpu().to(kFloat64);
}

struct Act {
  const char* name;
  std::function<Tensor(const Tensor&)> fwd;
  // (grad_out, x, y): the op's backward from the saved tensor it takes.
  std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)> bwd;
  std::function<Tensor(const Tensor&)> differentiable;
};

std::vector<Act> acts() {
  using G = GeluApproximate;
  return {
      {"relu", [](const Tensor& x) { return ops::relu(x); },
       [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::relu_backward(g, x); },
       [](const Tensor& x) { return relu(x); }},
      {"leaky_relu", [](const Tensor& x) { return ops::leaky_relu(x, 0.1); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::leaky_relu_backward(g, x, 0.1);
       },
       [](const Tensor& x) { return leaky_relu(x, 0.1); }},
      {"sigmoid", [](const Tensor& x) { return ops::sigmoid(x); },
       [](const Tensor& g, const Tensor&, const Tensor& y) { return ops::sigmoid_backward(g, y); },
       [](const Tensor& x) { return sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return ops::tanh(x); },
       [](const Tensor& g, const Tensor&, const Tensor& y) { return ops::tanh_backward(g, y); },
       [](const Tensor& x) { return ember::tanh(x); }},
      {"gelu", [](const Tensor& x) { return ops::gelu(x, G::None); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::gelu_backward(g, x, G::None);
       },
       [](const Tensor& x) { return gelu(x, G::None); }},
      {"gelu tanh", [](const Tensor& x) { return ops::gelu(x, G::Tanh); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::gelu_backward(g, x, G::Tanh);
       },
       [](const Tensor& x) { return gelu(x, G::Tanh); }},
      {"silu", [](const Tensor& x) { return ops::silu(x); },
       [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::silu_backward(g, x); },
       [](const Tensor& x) { return silu(x); }},
      {"elu", [](const Tensor& x) { return ops::elu(x, 1.5); },
       [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::elu_backward(g, x, 1.5); },
       [](const Tensor& x) { return elu(x, 1.5); }},
      {"softplus", [](const Tensor& x) { return ops::softplus(x, 1.0, 20.0); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::softplus_backward(g, x, 1.0, 20.0);
       },
       [](const Tensor& x) { return softplus(x); }},
      {"softplus beta=2 threshold=3", [](const Tensor& x) { return ops::softplus(x, 2.0, 3.0); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::softplus_backward(g, x, 2.0, 3.0);
       },
       [](const Tensor& x) { return softplus(x, 2.0, 3.0); }},
  };
}

const Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

// Random class indices for `shape`, with ignore_index placed at some positions.
Tensor random_targets(const Shape& shape, int64_t c, int64_t ignore, std::mt19937& g) {
  std::vector<int64_t> v(static_cast<size_t>(checked_numel(shape)));
  std::uniform_int_distribution<int64_t> pick(0, c - 1);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i % 5 == 3 ? ignore : pick(g);
  return from_vector(v, shape);
}

Shape without_dim1(Shape s) {
  s.erase(s.begin() + 1);
  return s;
}

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

TEST_CASE("emu activations and their backward ops match the cpu in float64") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const Act& a : acts()) {
      CAPTURE(std::string(a.name));
      for (DType t : {kFloat32, kFloat64}) {
        for (const Shape& shape : {Shape{1}, Shape{3}, Shape{33}, Shape{1000}, Shape{0, 3}}) {
          for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
            CAPTURE(t);
            CAPTURE(shape);
            CAPTURE(std::string(layout_name(l)));
            const Tensor x = random_operand(shape, t, l, -6, 6, g, 0.0, emu());
            const Tensor go = random_operand(shape, t, l, -1, 1, g, 0.0, emu());
            const Tensor y = a.fwd(x);
            CHECK(y.device() == emu());
            CHECK(y.dtype() == t);
            check_close(y, a.fwd(ref(x)), tol(t), atol(t));
            const Tensor dx = a.bwd(go, x, y);
            CHECK(dx.device() == emu());
            check_close(dx, a.bwd(ref(go), ref(x), ref(y)), tol(t), atol(t));
          }
        }
        // float32 off the float4 alignment (one element into a buffer), and large inputs.
        const Tensor big = random_operand({1001}, t, Layout::contiguous, -90, 90, g, 0.0, emu());
        const Tensor x = big.slice(0, 1, 1001), go = ops::sigmoid(big).slice(0, 0, 1000);
        check_close(a.fwd(x), a.fwd(ref(x)), tol(t), atol(t));
        check_close(a.bwd(go, x, a.fwd(x)), a.bwd(ref(go), ref(x), ref(a.fwd(x))), tol(t), atol(t));
      }
    }
  }
}

TEST_CASE("emu softmax and log_softmax match the cpu over every dim and row length") {
  std::mt19937 g(fresh_seed());
  struct Case {
    Shape shape;
    int64_t dim;
  };
  // Rows of 1, 3, 33, 1000 (one warp per row) and 1500 (one block per row) along the last dim;
  // dims 0, 1 and 2 of a 3-D tensor (the strided columns); a 0-D and an empty tensor.
  const Case cases[] = {{{4, 1}, 1},    {{5, 3}, -1},   {{3, 33}, 1},   {{2, 1000}, -1},
                        {{2, 1500}, 1}, {{3, 5, 7}, 0}, {{3, 5, 7}, 1}, {{3, 5, 7}, 2},
                        {{9}, 0},       {{}, 0},        {{2, 0, 3}, 1}, {{2, 0, 3}, 2}};
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const Case& c : cases)
      for (DType t : {kFloat32, kFloat64})
        for (Layout l : {Layout::contiguous, Layout::transposed})
          for (double range : {3.0, 80.0}) {
            CAPTURE(c.shape);
            CAPTURE(c.dim);
            CAPTURE(t);
            CAPTURE(std::string(layout_name(l)));
            CAPTURE(range);
            const Tensor x = random_operand(c.shape, t, l, -range, range, g, 0.0, emu());
            const Tensor go = random_operand(c.shape, t, l, -1, 1, g, 0.0, emu());
            for (bool log : {false, true}) {
              CAPTURE(log);
              const Tensor y = log ? ops::log_softmax(x, c.dim) : ops::softmax(x, c.dim);
              CHECK(y.device() == emu());
              const Tensor want =
                  log ? ops::log_softmax(ref(x), c.dim) : ops::softmax(ref(x), c.dim);
              // f32 log_softmax of logits near 80: the error is relative to the logits.
              check_close(y, want, tol(t), atol(t) * range);
              const Tensor dx = log ? ops::log_softmax_backward(go, y, c.dim)
                                    : ops::softmax_backward(go, y, c.dim);
              const Tensor dwant = log ? ops::log_softmax_backward(ref(go), ref(y), c.dim)
                                       : ops::softmax_backward(ref(go), ref(y), c.dim);
              check_close(dx, dwant, tol(t), atol(t));
            }
          }
  }
}

TEST_CASE("emu softmax stays finite for huge and -inf logits, as on the cpu") {
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    const double inf = INFINITY;
    for (DType t : {kFloat32, kFloat64}) {
      // Rows: huge, huge negative, one -inf entry, all -inf (NaN on both devices).
      const Tensor x =
          from_vector<double>(
              {1000, 1001, 1002, -1e30, -1e30 + 1e24, -2e30, 0, -inf, 5, -inf, -inf, -inf}, {4, 3})
              .to(t);
      for (int64_t dim : {1, 0}) {
        CAPTURE(t);
        CAPTURE(dim);
        check_close(ops::softmax(x.to(emu()), dim), ops::softmax(x, dim).to(kFloat64), tol(t), 0);
        check_close(ops::log_softmax(x.to(emu()), dim), ops::log_softmax(x, dim).to(kFloat64),
                    tol(t), 0);
      }
    }
  }
}

TEST_CASE("emu cross_entropy and nll_loss match the cpu for every reduction") {
  std::mt19937 g(fresh_seed());
  // [N, C] rows of 1, 5, 33 and 1100 classes (the last: one block per row); [N, C, d...] with
  // the class dim strided.
  const Shape shapes[] = {{4, 1}, {1, 5}, {6, 33}, {2, 1100}, {2, 3, 5, 7}, {3, 4, 2}};
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const Shape& shape : shapes)
      for (DType t : {kFloat32, kFloat64})
        for (Reduction r : kReductions)
          for (double eps : {0.0, 0.2})
            for (int64_t ignore : {int64_t{-100}, int64_t{0}}) {
              CAPTURE(shape);
              CAPTURE(t);
              CAPTURE(static_cast<int>(r));
              CAPTURE(eps);
              CAPTURE(ignore);
              const double range = shape[1] == 5 ? 80.0 : 4.0;
              const Tensor x =
                  random_operand(shape, t, Layout::transposed, -range, range, g, 0.0, emu());
              const Tensor target = random_targets(without_dim1(shape), shape[1], ignore, g);
              const Tensor tg = target.to(emu());
              const ops::NllOutput got = ops::cross_entropy(x, tg, ignore, r, eps);
              const ops::NllOutput want = ops::cross_entropy(ref(x), target, ignore, r, eps);
              CHECK(got.loss.device() == emu());
              CHECK(got.count == want.count);
              check_close(got.loss, want.loss, tol(t), atol(t) * range);
              check_close(got.log_probs, want.log_probs, tol(t), atol(t) * range);
              const Tensor go =
                  r == Reduction::None
                      ? random_operand(target.shape(), t, Layout::contiguous, -1, 1, g, 0.0, emu())
                      : full({}, 0.7, {t, emu()});
              const Tensor dx =
                  ops::cross_entropy_backward(go, got.log_probs, tg, ignore, r, eps, got.count);
              check_close(dx,
                          ops::cross_entropy_backward(ref(go), ref(got.log_probs), target, ignore,
                                                      r, eps, got.count),
                          tol(t), atol(t));
              if (eps != 0) continue;
              const ops::NllOutput nll = ops::nll_loss(got.log_probs, tg, ignore, r);
              const ops::NllOutput nll_want = ops::nll_loss(ref(got.log_probs), target, ignore, r);
              CHECK(nll.count == nll_want.count);
              check_close(nll.loss, nll_want.loss, tol(t), atol(t));
              check_close(
                  ops::nll_loss_backward(go, got.log_probs, tg, ignore, r, nll.count),
                  ops::nll_loss_backward(ref(go), ref(got.log_probs), target, ignore, r, nll.count),
                  tol(t), 0);
            }
  }
}

TEST_CASE("emu cross_entropy: empty batches, all ignored, and targets out of range") {
  for (DType t : {kFloat32, kFloat64}) {
    CAPTURE(t);
    const Tensor x = zeros({0, 4}, {t, emu()});
    const Tensor tg = from_vector<int64_t>(std::vector<int64_t>{}, Shape{0}).to(emu());
    CHECK(std::isnan(ops::cross_entropy(x, tg, -100, Reduction::Mean, 0.0).loss.item()));
    CHECK(ops::cross_entropy(x, tg, -100, Reduction::Sum, 0.1).loss.item() == 0.0);
    CHECK(ops::cross_entropy(x, tg, -100, Reduction::None, 0.0).loss.shape() == Shape{0});
    const Tensor x2 = ones({2, 3}, {t, emu()});
    const Tensor all_ignored = from_vector<int64_t>({-100, -100}).to(emu());
    const ops::NllOutput r = ops::cross_entropy(x2, all_ignored, -100, Reduction::Mean, 0.0);
    CHECK(r.count == 0);
    CHECK(std::isnan(r.loss.item()));
    CHECK(ops::nll_loss(x2, all_ignored, -100, Reduction::Sum).loss.item() == 0.0);
  }
  const Tensor x = zeros({2, 3, 2}, {kFloat32, emu()});
  for (int64_t bad : {int64_t{3}, int64_t{-1}}) {
    const Tensor tg = from_vector<int64_t>({0, 1, 2, bad}, {2, 2}).to(emu());
    for (int k = 0; k < 2; ++k) {
      try {
        if (k == 0)
          (void)ops::cross_entropy(x, tg, -100, Reduction::Mean, 0.0);
        else
          (void)ops::nll_loss(x, tg, -100, Reduction::Mean);
        FAIL("no IndexError");
      } catch (const IndexError& e) {
        const std::string msg = e.what();
        CHECK(msg.find(k == 0 ? "cross_entropy" : "nll_loss") != std::string::npos);
        CHECK(msg.find("[1, 1]") != std::string::npos);
        CHECK(msg.find("3 classes") != std::string::npos);
      }
    }
  }
}

TEST_CASE("emu mse_loss matches the cpu for every reduction") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const Shape& shape :
         {Shape{0}, Shape{1}, Shape{33}, Shape{1000}, Shape{70000}, Shape{3, 5}})
      for (DType t : {kFloat32, kFloat64})
        for (Reduction r : kReductions) {
          CAPTURE(shape);
          CAPTURE(t);
          CAPTURE(static_cast<int>(r));
          const Tensor x = random_operand(shape, t, Layout::transposed, -2, 2, g, 0.0, emu());
          const Tensor y = random_operand(shape, t, Layout::sliced, -2, 2, g, 0.0, emu());
          const Tensor loss = ops::mse_loss(x, y, r);
          CHECK(loss.device() == emu());
          check_close(loss, ops::mse_loss(ref(x), ref(y), r), tol(t), atol(t));
          const Tensor go = r == Reduction::None
                                ? random_operand(shape, t, Layout::contiguous, -1, 1, g, 0.0, emu())
                                : full({}, -1.3, {t, emu()});
          check_close(ops::mse_loss_backward(go, x, y, r),
                      ops::mse_loss_backward(ref(go), ref(x), ref(y), r), tol(t), atol(t));
        }
  }
}

TEST_CASE("emu dropout draws the cpu's mask bit for bit") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (DType t : {kFloat32, kFloat64})
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

TEST_CASE("emu linear and its backward match the cpu") {
  std::mt19937 g(fresh_seed());
  struct Case {
    Shape x, w;
    bool bias;
  };
  const Case cases[] = {{{2, 3, 5}, {4, 5}, true}, {{7}, {3, 7}, true},
                        {{1, 6}, {1, 6}, false},   {{1, 5}, {3, 5}, true},
                        {{0, 4}, {3, 4}, true},    {{5, 7, 1}, {2, 1}, true},
                        {{9, 33}, {17, 33}, true}, {{5, 7, 3}, {2, 3}, false}};
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (DType t : {kFloat32, kFloat64})
      for (const Case& c : cases)
        for (Layout l : {Layout::contiguous, Layout::transposed}) {
          CAPTURE(t);
          CAPTURE(c.x);
          CAPTURE(c.w);
          CAPTURE(std::string(layout_name(l)));
          const Tensor x = random_operand(c.x, t, l, -1, 1, g, 0.0, emu());
          const Tensor w = random_operand(c.w, t, l, -1, 1, g, 0.0, emu());
          const Tensor b =
              c.bias ? random_operand({c.w[0]}, t, Layout::sliced, -1, 1, g, 0.0, emu()) : Tensor();
          const Tensor y = ops::linear(x, w, b);
          CHECK(y.device() == emu());
          check_close(y, ops::linear(ref(x), ref(w), c.bias ? ref(b) : Tensor()), tol(t), atol(t));
          const Tensor go = random_operand(y.shape(), t, l, -1, 1, g, 0.0, emu());
          const ops::LinearGrads got = ops::linear_backward(go, x, w, true, true, true);
          const ops::LinearGrads want =
              ops::linear_backward(ref(go), ref(x), ref(w), true, true, true);
          check_close(got.grad_input, want.grad_input, tol(t), atol(t));
          check_close(got.grad_weight, want.grad_weight, tol(t), atol(t));
          check_close(got.grad_bias, want.grad_bias, tol(t), atol(t));
        }
  }
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

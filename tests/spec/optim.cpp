// The fused optimiser updates (ops::sgd_step_, ops::adam_step_) on every target
// (tests/spec/spec.h) against PyTorch's update rules written out in float64 in the test (torch/
// optim/sgd.py and adam.py): SGD plain, with momentum, dampening and weight decay, Nesterov;
// Adam with L2 weight decay and AdamW with decoupled decay; four steps each, so the momentum
// buffer's first-step initialisation and the bias corrections are checked; and nn::SGD/Adam/
// AdamW on every target, with the gradient from a backward pass, against the same rules.
// float16/bfloat16 parameters and state compute in float32 and round once per stored value: each
// within 1 ulp of the float64 rule applied to the same rounded values.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "nn/optim.h"
#include "ops/optim.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

// One SGD step of PyTorch's rule on p and its momentum buffer, in place.
void sgd_reference(std::vector<double>& p, const std::vector<double>& grad,
                   std::vector<double>& buf, const ops::SgdParams& s) {
  for (size_t i = 0; i < p.size(); ++i) {
    double d = grad[i] + s.weight_decay * p[i];
    if (s.momentum != 0) {
      buf[i] = s.first_step ? d : s.momentum * buf[i] + (1 - s.dampening) * d;
      d = s.nesterov ? d + s.momentum * buf[i] : buf[i];
    }
    p[i] -= s.lr * d;
  }
}

// One Adam/AdamW step of PyTorch's rule on p and its two moments, in place.
void adam_reference(std::vector<double>& p, const std::vector<double>& grad, std::vector<double>& m,
                    std::vector<double>& v, const ops::AdamParams& s) {
  const double bc1 = 1 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bc2 = 1 - std::pow(s.beta2, static_cast<double>(s.step));
  for (size_t i = 0; i < p.size(); ++i) {
    double gi = grad[i];
    if (s.decoupled)
      p[i] *= 1 - s.lr * s.weight_decay;
    else
      gi += s.weight_decay * p[i];
    m[i] = s.beta1 * m[i] + (1 - s.beta1) * gi;
    v[i] = s.beta2 * v[i] + (1 - s.beta2) * gi * gi;
    p[i] -= s.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + s.eps);
  }
}

ops::SgdParams sgd(double lr, double momentum, double dampening, double wd, bool nesterov) {
  ops::SgdParams s;
  s.lr = lr, s.momentum = momentum, s.dampening = dampening, s.weight_decay = wd;
  s.nesterov = nesterov;
  return s;
}

ops::AdamParams adam(double wd, bool decoupled) {
  ops::AdamParams s;
  s.lr = 0.01, s.beta1 = 0.9, s.beta2 = 0.99, s.eps = 1e-8, s.weight_decay = wd;
  s.decoupled = decoupled;
  return s;
}

}  // namespace

// Runs body(dev, t, shape, rule) for every target, dtype, shape (odd, one element, past a vector
// width, empty) and rule, with all of them in a failure's context.
template <typename Rule, size_t N, typename Body>
void for_each_update_case(const Rule (&rules)[N], Body&& body) {
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      for (const Shape& shape : {Shape{3, 37}, Shape{1}, Shape{1031}, Shape{0}}) {
        for (size_t r = 0; r < N; ++r) {
          CAPTURE(t);
          CAPTURE(shape);
          CAPTURE(r);
          body(dev, t, shape, rules[r]);
        }
      }
    }
  });
}

TEST_CASE("SGD updates follow PyTorch's rule on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const ops::SgdParams rules[] = {sgd(0.1, 0, 0, 0, false), sgd(0.1, 0.9, 0.1, 0.01, false),
                                  sgd(0.1, 0.9, 0, 0.01, true), sgd(0.05, 0.5, 0.5, 0, false)};
  for_each_update_case(rules, [&](Device dev, DType t, const Shape& shape, ops::SgdParams s) {
    const Tensor p = random_tensor(shape, t, -1, 1, g).to(dev);
    const Tensor buf = s.momentum != 0 ? zeros(shape, {t, dev}) : Tensor();
    std::vector<double> pv = p.to_vector<double>(), bv(pv.size(), 0.0);
    for (int step = 0; step < 4; ++step) {
      CAPTURE(step);
      const Tensor grad = random_tensor(shape, t, -1, 1, g).to(dev);
      s.first_step = step == 0;
      ops::sgd_step_(p, grad, buf, s);
      sgd_reference(pv, grad.to_vector<double>(), bv, s);
      check_result(p, dev, t, shape, pv);
      if (buf.defined()) check_result(buf, dev, t, shape, bv);
      // The reference goes on from the rounded values, as the parameter does.
      pv = p.to_vector<double>();
      if (buf.defined()) bv = buf.to_vector<double>();
    }
  });
}

TEST_CASE("Adam and AdamW updates follow PyTorch's rule on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const ops::AdamParams rules[] = {adam(0, false), adam(0.1, false), adam(0.1, true)};
  for_each_update_case(rules, [&](Device dev, DType t, const Shape& shape, ops::AdamParams s) {
    const Tensor p = random_tensor(shape, t, -1, 1, g).to(dev);
    const Tensor m = zeros(shape, {t, dev}), v = zeros(shape, {t, dev});
    std::vector<double> pv = p.to_vector<double>(), mv(pv.size(), 0.0), vv(pv.size(), 0.0);
    for (int step = 1; step <= 4; ++step) {
      CAPTURE(step);
      const Tensor grad = random_tensor(shape, t, -1, 1, g).to(dev);
      s.step = step;
      ops::adam_step_(p, grad, m, v, s);
      adam_reference(pv, grad.to_vector<double>(), mv, vv, s);
      check_result(p, dev, t, shape, pv);
      check_result(m, dev, t, shape, mv);
      check_result(v, dev, t, shape, vv);
      pv = p.to_vector<double>(), mv = m.to_vector<double>(), vv = v.to_vector<double>();
    }
  });
}

TEST_CASE("nn::SGD, nn::Adam and nn::AdamW step a parameter on every target by PyTorch's rules") {
  std::mt19937 g(fresh_seed());
  for_each_target([&](Device dev) {
    for (int which = 0; which < 3; ++which) {
      CAPTURE(which);
      const Tensor init = random_tensor({3, 37}, kFloat64, -1, 1, g);
      Tensor p = init.to(dev);
      requires_grad_(p);
      std::unique_ptr<nn::Optimizer> opt;
      if (which == 0)
        opt =
            std::make_unique<nn::SGD>(std::vector<Tensor>{p}, nn::SGDOptions{0.1, 0.9, 0.1, 0.01});
      if (which == 1)
        opt = std::make_unique<nn::Adam>(std::vector<Tensor>{p},
                                         nn::AdamOptions{0.01, 0.9, 0.99, 1e-8, 0.1});
      if (which == 2)
        opt = std::make_unique<nn::AdamW>(std::vector<Tensor>{p},
                                          nn::AdamOptions{0.01, 0.9, 0.99, 1e-8, 0.1});
      std::vector<double> pv = init.to_vector<double>(), b(pv.size(), 0.0), m(pv.size(), 0.0),
                          v(pv.size(), 0.0);
      for (int step = 1; step <= 3; ++step) {
        // d/dp sum(p * c) = c: the gradient arrives through the autograd engine on the device.
        const Tensor c = random_tensor({3, 37}, kFloat64, -1, 1, g);
        zero_grad(p);
        backward(sum(mul(p, c.to(dev))));
        opt->step();
        const std::vector<double> gv = c.to_vector<double>();
        if (which == 0) {
          ops::SgdParams s = sgd(0.1, 0.9, 0.1, 0.01, false);
          s.first_step = step == 1;
          sgd_reference(pv, gv, b, s);
        } else {
          ops::AdamParams s = adam(0.1, which == 2);
          s.step = step;
          adam_reference(pv, gv, m, v, s);
        }
        check_result(p, dev, kFloat64, {3, 37}, pv);
      }
    }
  });
}

}  // namespace ember::test

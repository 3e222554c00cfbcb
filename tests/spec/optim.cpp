// The fused optimiser updates (ops::sgd_step_, adam_step_, rmsprop_step_, adagrad_step_) on every
// target (tests/spec/spec.h) against PyTorch's update rules written out in float64 in the test
// (torch/optim/sgd.py, adam.py, rmsprop.py, adagrad.py): SGD plain, with momentum, dampening and
// weight decay, Nesterov, maximize; Adam with L2 weight decay and AdamW with decoupled decay;
// RMSprop plain, centered, with momentum and weight decay; Adagrad with lr decay and an initial
// accumulator; four steps each, so the momentum buffer's first-step initialisation and the bias
// corrections are checked; nn::SGD/Adam/AdamW/RMSprop/Adagrad on every target, with the gradient
// from a backward pass, against the same rules; and the gradient clip's fused scaling
// (ops::clip_grad_scale_) against min(max_norm / (norm + 1e-6), 1) in the norm's dtype.
// float16/bfloat16 parameters and state compute in float32 and round once per stored value: each
// within 1 ulp of the float64 rule applied to the same rounded values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
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
    double d = (s.maximize ? -grad[i] : grad[i]) + s.weight_decay * p[i];
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
    double gi = s.maximize ? -grad[i] : grad[i];
    if (s.decoupled)
      p[i] *= 1 - s.lr * s.weight_decay;
    else
      gi += s.weight_decay * p[i];
    m[i] = s.beta1 * m[i] + (1 - s.beta1) * gi;
    v[i] = s.beta2 * v[i] + (1 - s.beta2) * gi * gi;
    p[i] -= s.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + s.eps);
  }
}

// One RMSprop step of PyTorch's rule on p and its buffers, in place.
void rmsprop_reference(std::vector<double>& p, const std::vector<double>& grad,
                       std::vector<double>& sq, std::vector<double>& ga, std::vector<double>& buf,
                       const ops::RmspropParams& s) {
  for (size_t i = 0; i < p.size(); ++i) {
    double d = s.maximize ? -grad[i] : grad[i];
    d += s.weight_decay * p[i];
    sq[i] = s.alpha * sq[i] + (1 - s.alpha) * d * d;
    double avg;
    if (s.centered) {
      ga[i] = s.alpha * ga[i] + (1 - s.alpha) * d;
      avg = std::sqrt(sq[i] - ga[i] * ga[i]) + s.eps;
    } else {
      avg = std::sqrt(sq[i]) + s.eps;
    }
    if (s.momentum > 0) {
      buf[i] = s.momentum * buf[i] + d / avg;
      p[i] -= s.lr * buf[i];
    } else {
      p[i] -= s.lr * d / avg;
    }
  }
}

// One Adagrad step of PyTorch's rule on p and its sum, in place (s.step 1-based).
void adagrad_reference(std::vector<double>& p, const std::vector<double>& grad,
                       std::vector<double>& sum, const ops::AdagradParams& s) {
  const double clr = s.lr / (1 + static_cast<double>(s.step - 1) * s.lr_decay);
  for (size_t i = 0; i < p.size(); ++i) {
    double d = s.maximize ? -grad[i] : grad[i];
    d += s.weight_decay * p[i];
    sum[i] += d * d;
    p[i] -= clr * d / (std::sqrt(sum[i]) + s.eps);
  }
}

ops::RmspropParams rmsprop(double wd, double momentum, bool centered, bool maximize) {
  ops::RmspropParams s;
  s.lr = 0.01, s.alpha = 0.9, s.eps = 1e-8, s.weight_decay = wd, s.momentum = momentum;
  s.centered = centered, s.maximize = maximize;
  return s;
}

ops::AdagradParams adagrad(double lr_decay, double wd, bool maximize) {
  ops::AdagradParams s;
  s.lr = 0.1, s.lr_decay = lr_decay, s.weight_decay = wd, s.eps = 1e-10, s.maximize = maximize;
  return s;
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

// A random gradient for parameters p under L2 decay wd (sign -1 where the rule maximizes), whose
// elements keep the decayed gradient sign*g + wd*p away from cancelling: where it cancels to
// within a thousandth of its parts, float32's rounding of the sum is all that is left, and Adam,
// RMSprop and Adagrad divide it by its own root, an update of up to lr in a direction the
// rounding chose (float16: g = -0.0125122, p = 0.125122, wd = 0.1 moved p by 1.5 ulps where the
// float64 rule leaves it). Such an element is negated, which keeps it random and far from
// cancelling.
Tensor gradient_for(const Tensor& p, double wd, double sign, std::mt19937& g) {
  const Tensor raw = random_tensor(p.shape(), p.dtype(), -1, 1, g);
  if (wd == 0) return raw.to(p.device());
  std::vector<double> gv = raw.to_vector<double>();
  const std::vector<double> pv = p.to_vector<double>();
  for (size_t i = 0; i < gv.size(); ++i)
    if (std::abs(sign * gv[i] + wd * pv[i]) < 1e-3 * (std::abs(gv[i]) + std::abs(wd * pv[i])))
      gv[i] = -gv[i];
  return from_vector(gv, p.shape()).to(p.dtype()).to(p.device());
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
  ops::SgdParams ascend = sgd(0.1, 0.9, 0.1, 0.01, false);
  ascend.maximize = true;
  const ops::SgdParams rules[] = {sgd(0.1, 0, 0, 0, false), sgd(0.1, 0.9, 0.1, 0.01, false),
                                  sgd(0.1, 0.9, 0, 0.01, true), sgd(0.05, 0.5, 0.5, 0, false),
                                  ascend};
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
  ops::AdamParams ascend = adam(0.1, true);
  ascend.maximize = true;
  const ops::AdamParams rules[] = {adam(0, false), adam(0.1, false), adam(0.1, true), ascend};
  for_each_update_case(rules, [&](Device dev, DType t, const Shape& shape, ops::AdamParams s) {
    const Tensor p = random_tensor(shape, t, -1, 1, g).to(dev);
    const Tensor m = zeros(shape, {t, dev}), v = zeros(shape, {t, dev});
    std::vector<double> pv = p.to_vector<double>(), mv(pv.size(), 0.0), vv(pv.size(), 0.0);
    for (int step = 1; step <= 4; ++step) {
      CAPTURE(step);
      const Tensor grad =
          gradient_for(p, s.decoupled ? 0.0 : s.weight_decay, s.maximize ? -1.0 : 1.0, g);
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

TEST_CASE("RMSprop updates follow PyTorch's rule on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const ops::RmspropParams rules[] = {rmsprop(0, 0, false, false), rmsprop(0.1, 0, true, false),
                                      rmsprop(0, 0.9, false, false),
                                      rmsprop(0.01, 0.5, true, true)};
  for_each_update_case(rules, [&](Device dev, DType t, const Shape& shape, ops::RmspropParams s) {
    const Tensor p = random_tensor(shape, t, -1, 1, g).to(dev);
    const Tensor sq = zeros(shape, {t, dev});
    const Tensor ga = s.centered ? zeros(shape, {t, dev}) : Tensor();
    const Tensor buf = s.momentum > 0 ? zeros(shape, {t, dev}) : Tensor();
    std::vector<double> pv = p.to_vector<double>(), sv(pv.size(), 0.0), gv(pv.size(), 0.0),
                        bv(pv.size(), 0.0);
    for (int step = 1; step <= 4; ++step) {
      CAPTURE(step);
      const Tensor grad = gradient_for(p, s.weight_decay, s.maximize ? -1.0 : 1.0, g);
      ops::rmsprop_step_(p, grad, sq, ga, buf, s);
      rmsprop_reference(pv, grad.to_vector<double>(), sv, gv, bv, s);
      check_result(p, dev, t, shape, pv);
      check_result(sq, dev, t, shape, sv);
      if (ga.defined()) check_result(ga, dev, t, shape, gv);
      if (buf.defined()) check_result(buf, dev, t, shape, bv);
      pv = p.to_vector<double>(), sv = sq.to_vector<double>();
      if (ga.defined()) gv = ga.to_vector<double>();
      if (buf.defined()) bv = buf.to_vector<double>();
    }
  });
}

TEST_CASE("Adagrad updates follow PyTorch's rule on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const ops::AdagradParams rules[] = {adagrad(0, 0, false), adagrad(0.1, 0.01, false),
                                      adagrad(0.5, 0, true)};
  for_each_update_case(rules, [&](Device dev, DType t, const Shape& shape, ops::AdagradParams s) {
    const Tensor p = random_tensor(shape, t, -1, 1, g).to(dev);
    const Tensor sum = full(shape, 0.25, {t, dev});  // an initial_accumulator_value
    std::vector<double> pv = p.to_vector<double>(), sv(pv.size(), 0.25);
    for (int step = 1; step <= 4; ++step) {
      CAPTURE(step);
      const Tensor grad = gradient_for(p, s.weight_decay, s.maximize ? -1.0 : 1.0, g);
      s.step = step;
      ops::adagrad_step_(p, grad, sum, s);
      adagrad_reference(pv, grad.to_vector<double>(), sv, s);
      check_result(p, dev, t, shape, pv);
      check_result(sum, dev, t, shape, sv);
      pv = p.to_vector<double>(), sv = sum.to_vector<double>();
    }
  });
}

// The clip coefficient as PyTorch's tensor arithmetic in the norm's dtype gives it: each
// operation rounded to that dtype (float32 arithmetic for the half types, then rounded).
double clip_coef_reference(double norm, double max_norm, DType t) {
  auto r = [t](double v) {
    if (t == kFloat64) return v;
    return as_stored(static_cast<double>(static_cast<float>(v)), t);
  };
  const double denom = r(r(norm) + r(1e-6));
  const double coef = r(r(max_norm) / denom);
  return std::isnan(coef) ? coef : std::min(coef, 1.0);
}

TEST_CASE("clip_grad_scale_ multiplies by min(max_norm / (norm + 1e-6), 1) on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const double inf = std::numeric_limits<double>::infinity();
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      for (DType nt : {kFloat32, kFloat64, kFloat16}) {
        for (double norm : {7.5, 0.3, inf, std::nan("")}) {
          for (const Shape& shape : {Shape{3, 37}, Shape{1}, Shape{1031}, Shape{0}}) {
            CAPTURE(t);
            CAPTURE(nt);
            CAPTURE(norm);
            CAPTURE(shape);
            const Tensor grad = random_tensor(shape, t, -1, 1, g).to(dev);
            const std::vector<double> before = grad.to_vector<double>();
            const Tensor total = full({}, norm, {nt, dev});
            ops::clip_grad_scale_(grad, total, 1.5);
            const double c = clip_coef_reference(norm, 1.5, nt);
            std::vector<double> want(before.size());
            for (size_t i = 0; i < want.size(); ++i)
              want[i] =
                  before[i] * (t == kFloat64 ? c : static_cast<double>(static_cast<float>(c)));
            check_result(grad, dev, t, shape, want);
          }
        }
      }
    }
  });
  CHECK_THROWS_AS(ops::clip_grad_scale_(zeros({3}), zeros({2}), 1.0), ShapeError);
  CHECK_THROWS_AS(ops::clip_grad_scale_(zeros({3}), zeros({}, kInt64), 1.0), DTypeError);
  CHECK_THROWS_AS(ops::clip_grad_scale_(zeros({3}, kInt32), zeros({}), 1.0), DTypeError);
  CHECK_THROWS_AS(ops::clip_grad_scale_(zeros({4, 3}).transpose(0, 1), zeros({}), 1.0), ValueError);
  CHECK_THROWS_AS(
      ops::clip_grad_scale_(zeros({3}), zeros({}, {kFloat32, Device(DeviceType::EMU, 0)}), 1.0),
      DeviceError);
}

TEST_CASE("nn's optimisers step a parameter on every target by PyTorch's rules") {
  std::mt19937 g(fresh_seed());
  for_each_target([&](Device dev) {
    for (int which = 0; which < 5; ++which) {
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
      if (which == 3)
        opt = std::make_unique<nn::RMSprop>(
            std::vector<Tensor>{p}, nn::RMSpropOptions{0.01, 0.9, 1e-8, 0.01, 0.5, true, true});
      if (which == 4)
        opt = std::make_unique<nn::Adagrad>(std::vector<Tensor>{p},
                                            nn::AdagradOptions{0.1, 0.1, 0.01, 0.25, 1e-10});
      std::vector<double> pv = init.to_vector<double>(), b(pv.size(), 0.0), m(pv.size(), 0.0),
                          v(pv.size(), 0.0), sq(pv.size(), 0.0), ga(pv.size(), 0.0),
                          acc(pv.size(), 0.25);
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
        } else if (which <= 2) {
          ops::AdamParams s = adam(0.1, which == 2);
          s.step = step;
          adam_reference(pv, gv, m, v, s);
        } else if (which == 3) {
          rmsprop_reference(pv, gv, sq, ga, b, rmsprop(0.01, 0.5, true, true));
        } else {
          ops::AdagradParams s = adagrad(0.1, 0.01, false);
          s.step = step;
          adagrad_reference(pv, gv, acc, s);
        }
        check_result(p, dev, kFloat64, {3, 37}, pv);
      }
    }
  });
}

}  // namespace ember::test

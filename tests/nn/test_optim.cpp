// Optimisers against update rules computed by hand in the test, resume from a state dict bit
// for bit, and learning-rate schedules.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "nn/lr_scheduler.h"
#include "nn/optim.h"

using namespace ember;
using namespace ember::nn;

namespace {
// Sets p.grad = g by backpropagating sum(p * g).
void set_grad(Tensor& p, const std::vector<double>& g) {
  zero_grad(p);
  backward(sum(mul(p, from_vector(g, p.shape()).to(p.dtype()))));
}
Tensor param(std::vector<double> v, DType t = kFloat64) {
  Tensor p = from_vector(v).to(t);
  requires_grad_(p);
  return p;
}
const std::vector<std::vector<double>> kGrads = {{0.5, -1.0, 2.0}, {0.1, 0.3, -0.2}, {-1.5, 0.0, 1.0}};
const std::vector<double> kStart = {1.0, -2.0, 0.5};
}  // namespace

TEST_CASE("SGD with momentum, dampening, nesterov and weight decay matches the textbook rule") {
  for (bool nesterov : {false, true}) {
    CAPTURE(nesterov);
    SGDOptions o{0.1, 0.9, nesterov ? 0.0 : 0.2, 0.01, nesterov};
    Tensor p = param(kStart);
    SGD opt({p}, o);
    std::vector<double> x = kStart, buf(3, 0.0);
    for (size_t s = 0; s < kGrads.size(); ++s) {
      set_grad(p, kGrads[s]);
      opt.step();
      for (int i = 0; i < 3; ++i) {
        double d = kGrads[s][i] + o.weight_decay * x[i];
        buf[i] = s == 0 ? d : o.momentum * buf[i] + (1 - o.dampening) * d;
        d = nesterov ? d + o.momentum * buf[i] : buf[i];
        x[i] -= o.lr * d;
      }
      std::vector<double> got = p.to_vector<double>();
      for (int i = 0; i < 3; ++i) CHECK(got[i] == doctest::Approx(x[i]).epsilon(1e-12));
    }
  }
  Tensor plain = param(kStart, kFloat32);
  SGD sgd({plain}, SGDOptions{0.5});
  set_grad(plain, kGrads[0]);
  sgd.step();
  CHECK(plain.to_vector<float>() == std::vector<float>{0.75f, -1.5f, -0.5f});
}

TEST_CASE("Adam and AdamW match the textbook rule with bias correction") {
  for (bool decoupled : {false, true}) {
    CAPTURE(decoupled);
    AdamOptions o{0.01, 0.8, 0.95, 1e-6, 0.1};
    Tensor p = param(kStart);
    Adam opt({p}, o, decoupled);
    std::vector<double> x = kStart, m(3, 0.0), v(3, 0.0);
    for (size_t s = 0; s < kGrads.size(); ++s) {
      set_grad(p, kGrads[s]);
      opt.step();
      const double t = static_cast<double>(s + 1);
      for (int i = 0; i < 3; ++i) {
        double g = kGrads[s][i];
        if (decoupled)
          x[i] *= 1 - o.lr * o.weight_decay;
        else
          g += o.weight_decay * x[i];
        m[i] = o.beta1 * m[i] + (1 - o.beta1) * g;
        v[i] = o.beta2 * v[i] + (1 - o.beta2) * g * g;
        double mhat = m[i] / (1 - std::pow(o.beta1, t)), vhat = v[i] / (1 - std::pow(o.beta2, t));
        x[i] -= o.lr * mhat / (std::sqrt(vhat) + o.eps);
      }
      std::vector<double> got = p.to_vector<double>();
      for (int i = 0; i < 3; ++i) CHECK(got[i] == doctest::Approx(x[i]).epsilon(1e-9));
    }
  }
  CHECK(AdamW({param(kStart)}).name() == "AdamW");
}

TEST_CASE("resuming from a state dict continues bit for bit") {
  auto run = [](bool resume, auto make) {
    Tensor p = param(kStart, kFloat32);
    auto opt = make(p);
    std::vector<float> out;
    for (size_t s = 0; s < 2 * kGrads.size(); ++s) {
      if (resume && s == kGrads.size()) {
        NamedTensors sd = opt->state_dict();
        Tensor q = param({0, 0, 0}, kFloat32);
        q.copy_(detach(p));
        p = q;
        opt = make(p);
        opt->load_state_dict(sd);
      }
      set_grad(p, kGrads[s % kGrads.size()]);
      opt->step();
    }
    return p.to_vector<float>();
  };
  auto adam = [](Tensor& p) { return std::make_unique<Adam>(std::vector<Tensor>{p}, AdamOptions{}); };
  auto sgd = [](Tensor& p) {
    return std::make_unique<SGD>(std::vector<Tensor>{p}, SGDOptions{0.1, 0.9});
  };
  CHECK(run(false, adam) == run(true, adam));
  CHECK(run(false, sgd) == run(true, sgd));
  Tensor p = param(kStart);
  SGD s({p}, SGDOptions{});
  CHECK_THROWS_AS(s.load_state_dict({{"state.5.momentum_buffer", zeros({3})}}), ValueError);
  CHECK_THROWS_AS(s.load_state_dict({{"state.0.momentum_buffer", zeros({4})}}), ShapeError);
}

TEST_CASE("bad optimiser arguments") {
  Tensor p = param({1.0});
  Tensor non_leaf = mul(p, 2.0);
  CHECK_THROWS_AS(SGD({non_leaf}, SGDOptions{}), ValueError);
  CHECK_THROWS_AS(SGD(std::vector<Tensor>{}, SGDOptions{}), ValueError);
  CHECK_THROWS_AS(SGD({p}, SGDOptions{-1.0}), ValueError);
  CHECK_THROWS_AS(SGD({p}, SGDOptions{0.1, 0.0, 0.0, 0.0, true}), ValueError);
  CHECK_THROWS_AS(Adam({p}, AdamOptions{0.1, 1.0}), ValueError);
}

TEST_CASE("learning-rate schedules") {
  Tensor p = param({1.0});
  SGD opt({p}, SGDOptions{0.1});
  StepLR step(opt, 2, 0.5);
  std::vector<double> lrs;
  for (int e = 0; e < 5; ++e) {
    lrs.push_back(opt.lr());
    step.step();
  }
  CHECK(lrs == std::vector<double>{0.1, 0.1, 0.05, 0.05, 0.025});

  SGD opt2({p}, SGDOptions{1.0});
  CosineAnnealingLR cos(opt2, 4, 0.0);
  cos.step();
  CHECK(opt2.lr() == doctest::Approx((1 + std::cos(M_PI / 4)) / 2));
  cos.set_epoch(4);
  CHECK(opt2.lr() == doctest::Approx(0.0));

  SGD opt3({p}, SGDOptions{0.3});
  LinearWarmupLR warm(opt3, 3, 0.25);
  CHECK(opt3.lr() == doctest::Approx(0.075));
  warm.step();
  CHECK(opt3.lr() == doctest::Approx(0.3 * 0.5));
  warm.step();
  warm.step();
  warm.step();
  CHECK(opt3.lr() == doctest::Approx(0.3));
}

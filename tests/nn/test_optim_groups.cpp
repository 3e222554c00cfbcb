// Parameter groups and state dicts of the optimisers (nn/optim.h), and RMSprop and Adagrad against
// PyTorch's rules written out in float64 here (torch/optim/rmsprop.py, adagrad.py): each group
// steps by its own options, edits between steps take effect, state dicts round-trip with groups
// (bit for bit, for every optimiser), older one-lr state dicts still load, checkpoints keep the
// groups, and a scaled RMSprop/Adagrad step on the emulator never waits for the device.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/loss.h"
#include "nn/checkpoint.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "nn_test_util.h"
#include "ops/op_test_util.h"
#include "runtime/gpu.h"

using namespace ember;
using namespace ember::nn;
using ember::test::message_of;

namespace {

const Device kEmu(DeviceType::EMU, 0);

Tensor param(std::vector<double> v, DType t = kFloat64) {
  Tensor p = from_vector(v).to(t);
  requires_grad_(p);
  return p;
}

// Sets p.grad = g by backpropagating sum(p * g).
void set_grad(Tensor& p, const std::vector<double>& g) {
  zero_grad(p);
  backward(sum(mul(p, from_vector(g, p.shape()).to(p.dtype()).to(p.device()))));
}

const std::vector<std::vector<double>> kGrads = {
    {0.5, -1.0, 2.0}, {0.1, 0.3, -0.2}, {-1.5, 0.0, 1.0}, {0.7, 0.7, -0.4}};
const std::vector<double> kStartA = {1.0, -2.0, 0.5}, kStartB = {0.3, 0.2, -0.9};

void check_close(const Tensor& got, const std::vector<double>& want, double eps = 1e-12) {
  const std::vector<double> g = got.to(kCPU).to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(eps));
}

// PyTorch's RMSprop rule, one step, in place.
void rmsprop_rule(std::vector<double>& p, const std::vector<double>& g, std::vector<double>& sq,
                  std::vector<double>& ga, std::vector<double>& buf, const RMSpropOptions& o) {
  for (size_t i = 0; i < p.size(); ++i) {
    double d = (o.maximize ? -g[i] : g[i]) + o.weight_decay * p[i];
    sq[i] = o.alpha * sq[i] + (1 - o.alpha) * d * d;
    double avg = o.centered
                     ? std::sqrt(sq[i] - std::pow(ga[i] = o.alpha * ga[i] + (1 - o.alpha) * d, 2))
                     : std::sqrt(sq[i]);
    avg += o.eps;
    if (o.momentum > 0) {
      buf[i] = o.momentum * buf[i] + d / avg;
      p[i] -= o.lr * buf[i];
    } else {
      p[i] -= o.lr * d / avg;
    }
  }
}

// PyTorch's Adagrad rule, step t (1-based), in place.
void adagrad_rule(std::vector<double>& p, const std::vector<double>& g, std::vector<double>& sum,
                  int t, const AdagradOptions& o) {
  const double clr = o.lr / (1 + (t - 1) * o.lr_decay);
  for (size_t i = 0; i < p.size(); ++i) {
    double d = (o.maximize ? -g[i] : g[i]) + o.weight_decay * p[i];
    sum[i] += d * d;
    p[i] -= clr * d / (std::sqrt(sum[i]) + o.eps);
  }
}

}  // namespace

TEST_CASE("SGD groups step by their own options, and edits between steps take effect") {
  Tensor a = param(kStartA), b = param(kStartB);
  SGD opt({ParamGroup{{a}, {}}, ParamGroup{{b}, {{"lr", 0.5}, {"momentum", 0.9}}}},
          SGDOptions{0.1, 0.0, 0.0, 0.01});
  REQUIRE(opt.param_groups().size() == 2);
  CHECK(opt.param_groups()[0].get("momentum") == 0.0);
  CHECK(opt.param_groups()[1].get("weight_decay") == 0.01);  // from the defaults
  std::vector<double> xa = kStartA, xb = kStartB, buf(3, 0.0);
  double lr_a = 0.1;
  for (size_t s = 0; s < kGrads.size(); ++s) {
    if (s == 2) {
      opt.param_groups()[0].options["lr"] = lr_a = 0.05;  // what a scheduler does
    }
    set_grad(a, kGrads[s]);
    set_grad(b, kGrads[s]);
    opt.step();
    for (int i = 0; i < 3; ++i) {
      xa[i] -= lr_a * (kGrads[s][i] + 0.01 * xa[i]);
      const double d = kGrads[s][i] + 0.01 * xb[i];
      buf[i] = s == 0 ? d : 0.9 * buf[i] + d;
      xb[i] -= 0.5 * buf[i];
    }
    check_close(a, xa);
    check_close(b, xb);
  }
  CHECK(opt.lr() == 0.05);
  opt.set_lr(0.2);
  CHECK(opt.param_groups()[1].lr() == 0.2);
}

TEST_CASE("add_param_group fills the defaults and refuses what PyTorch refuses") {
  Tensor a = param(kStartA), b = param(kStartB), c = param({1.0});
  Adam opt({a}, AdamOptions{0.01, 0.8, 0.9});
  opt.add_param_group({{b}, {{"lr", 0.1}}});
  CHECK(opt.param_groups()[1].get("beta1") == 0.8);
  CHECK(opt.param_groups()[1].lr() == 0.1);
  CHECK(opt.params().size() == 2);
  CHECK(message_of([&] {
          opt.add_param_group({{a}, {}});
        }) == "Adam: some parameters appear in more than one parameter group");
  CHECK(message_of([&] {
          opt.add_param_group({{c}, {{"momentum", 0.9}}});
        }).find("Adam: unknown option 'momentum'") == 0);
  CHECK(message_of([&] {
          opt.add_param_group({{c}, {{"beta2", 1.0}}});
        }) == "Adam: Invalid beta parameter at index 1: 1");
  Tensor non_leaf = mul(c, 2.0);
  CHECK_THROWS_AS(opt.add_param_group({{non_leaf}, {}}), ValueError);
  CHECK_THROWS_AS(SGD(std::vector<ParamGroup>{}, SGDOptions{}), ValueError);
  CHECK(message_of([&] {
          RMSprop({c}, RMSpropOptions{0.01, -0.5});
        }) == "RMSprop: Invalid alpha value: -0.5");
  CHECK(message_of([&] {
          Adagrad({c}, AdagradOptions{0.01, -1.0});
        }) == "Adagrad: Invalid lr_decay value: -1");
  // A parameter that never gets a gradient is allowed and left alone (PyTorch's rule).
  Tensor frozen = from_vector<double>({4.0});
  SGD sgd({frozen, c}, SGDOptions{0.1});
  set_grad(c, {1.0});
  sgd.step();
  CHECK(frozen.item() == 4.0);
  CHECK(c.item() == doctest::Approx(0.9));
}

TEST_CASE("RMSprop follows PyTorch's rule: plain, centered, momentum, weight decay, maximize") {
  const RMSpropOptions cases[] = {{0.01, 0.99, 1e-8, 0.0, 0.0, false, false},
                                  {0.05, 0.9, 1e-6, 0.1, 0.0, true, false},
                                  {0.02, 0.95, 1e-8, 0.0, 0.7, false, true},
                                  {0.01, 0.8, 1e-8, 0.05, 0.5, true, false}};
  for (const RMSpropOptions& o : cases) {
    CAPTURE(o.centered);
    CAPTURE(o.momentum);
    Tensor p = param(kStartA);
    RMSprop opt({p}, o);
    std::vector<double> x = kStartA, sq(3, 0.0), ga(3, 0.0), buf(3, 0.0);
    for (const auto& g : kGrads) {
      set_grad(p, g);
      opt.step();
      rmsprop_rule(x, g, sq, ga, buf, o);
      check_close(p, x);
    }
    std::string names;
    for (const auto& [k, t] : opt.state_dict())
      if (k.rfind("state.0.", 0) == 0) names += k.substr(8) + " ";
    CHECK(names == std::string("step square_avg ") + (o.centered ? "grad_avg " : "") +
                       (o.momentum > 0 ? "momentum_buffer " : ""));
  }
}

TEST_CASE("Adagrad follows PyTorch's rule: lr decay, initial accumulator, weight decay") {
  const AdagradOptions cases[] = {{0.1, 0.0, 0.0, 0.0, 1e-10, false},
                                  {0.5, 0.1, 0.01, 0.3, 1e-10, false},
                                  {0.2, 0.05, 0.0, 0.1, 1e-6, true}};
  for (const AdagradOptions& o : cases) {
    CAPTURE(o.lr_decay);
    Tensor p = param(kStartA);
    Adagrad opt({p}, o);
    // The sum exists from the start, filled with initial_accumulator_value.
    NamedTensors sd = opt.state_dict();
    CHECK(sd.back().first == "state.0.sum");
    CHECK(sd.back().second.to_vector<double>() ==
          std::vector<double>(3, o.initial_accumulator_value));
    std::vector<double> x = kStartA, sum(3, o.initial_accumulator_value);
    for (size_t s = 0; s < kGrads.size(); ++s) {
      set_grad(p, kGrads[s]);
      opt.step();
      adagrad_rule(x, kGrads[s], sum, static_cast<int>(s + 1), o);
      check_close(p, x);
    }
  }
}

TEST_CASE("state dicts with groups round-trip bit for bit for every optimiser") {
  using Make = std::function<std::unique_ptr<Optimizer>(Tensor&, Tensor&)>;
  const std::vector<std::pair<const char*, Make>> makers = {
      {"SGD",
       [](Tensor& a, Tensor& b) {
         return std::make_unique<SGD>(
             std::vector<ParamGroup>{{{a}, {}}, {{b}, {{"lr", 0.3}, {"nesterov", 1.0}}}},
             SGDOptions{0.1, 0.9});
       }},
      {"Adam",
       [](Tensor& a, Tensor& b) {
         return std::make_unique<Adam>(std::vector<ParamGroup>{{{a}, {}}, {{b}, {{"beta1", 0.5}}}},
                                       AdamOptions{});
       }},
      {"RMSprop",
       [](Tensor& a, Tensor& b) {
         return std::make_unique<RMSprop>(
             std::vector<ParamGroup>{{{a}, {{"centered", 1.0}}}, {{b}, {{"momentum", 0.9}}}},
             RMSpropOptions{});
       }},
      {"Adagrad", [](Tensor& a, Tensor& b) {
         return std::make_unique<Adagrad>(
             std::vector<ParamGroup>{{{a}, {{"lr_decay", 0.1}}}, {{b}, {}}},
             AdagradOptions{0.1, 0.0, 0.0, 0.2});
       }}};
  for (const auto& [name, make] : makers) {
    CAPTURE(name);
    auto run = [&, make = make](bool resume) {
      Tensor a = param(kStartA, kFloat32), b = param(kStartB, kFloat32);
      std::unique_ptr<Optimizer> opt = make(a, b);
      for (size_t s = 0; s < 2 * kGrads.size(); ++s) {
        if (resume && s == kGrads.size()) {
          const NamedTensors sd = opt->state_dict();
          Tensor a2 = param({0, 0, 0}, kFloat32), b2 = param({0, 0, 0}, kFloat32);
          a2.copy_(detach(a));
          b2.copy_(detach(b));
          a = a2, b = b2;
          opt = make(a, b);
          opt->param_groups()[1].options["lr"] = 123.0;  // overwritten by the load
          opt->load_state_dict(sd);
        }
        set_grad(a, kGrads[s % kGrads.size()]);
        set_grad(b, kGrads[(s + 1) % kGrads.size()]);
        opt->step();
      }
      std::vector<float> out = a.to_vector<float>(), bv = b.to_vector<float>();
      out.insert(out.end(), bv.begin(), bv.end());
      return out;
    };
    CHECK(run(false) == run(true));
  }
}

TEST_CASE("state dict keys, older one-lr state dicts, and load errors") {
  Tensor a = param(kStartA), b = param(kStartB);
  SGD opt({ParamGroup{{a}, {}}, ParamGroup{{b}, {{"lr", 0.5}}}}, SGDOptions{0.1, 0.9});
  set_grad(a, kGrads[0]);
  set_grad(b, kGrads[0]);
  opt.step();
  NamedTensors sd = opt.state_dict();
  auto find = [&](const std::string& k) {
    for (const auto& [n, t] : sd)
      if (n == k) return t;
    FAIL("no key " << k);
    return Tensor();
  };
  CHECK(find("param_groups.0.lr").item() == 0.1);
  CHECK(find("param_groups.1.lr").item() == 0.5);
  CHECK(find("param_groups.1.params").to_vector<int64_t>() == std::vector<int64_t>{1});
  CHECK(find("state.1.step").item<int64_t>() == 1);
  CHECK(find("state.1.momentum_buffer").shape() == Shape{3});
  // An older checkpoint's "lr" sets every group's.
  opt.load_state_dict({{"lr", full({}, 0.25, kFloat64)}});
  CHECK(opt.param_groups()[0].lr() == 0.25);
  CHECK(opt.param_groups()[1].lr() == 0.25);
  // Refused, and nothing changes.
  SGD one({param(kStartA)}, SGDOptions{0.1});
  CHECK(message_of([&] { one.load_state_dict(sd); }).find("different number of parameter groups") !=
        std::string::npos);
  CHECK(one.lr() == 0.1);
  SGD sizes({ParamGroup{{param(kStartA)}, {}}, ParamGroup{{param({1.0}), param({2.0})}, {}}},
            SGDOptions{0.1});
  CHECK(message_of([&] {
          sizes.load_state_dict(sd);
        }).find("doesn't match the size of optimizer's group") != std::string::npos);
  CHECK_THROWS_AS(opt.load_state_dict({{"param_groups.0.betas", full({}, 0.9, kFloat64)}}),
                  ValueError);
  CHECK_THROWS_AS(opt.load_state_dict({{"param_groups.0.lr", full({}, -1.0, kFloat64)},
                                       {"param_groups.1.lr", full({}, 1.0, kFloat64)}}),
                  ValueError);
  CHECK(opt.param_groups()[0].lr() == 0.25);
  CHECK_THROWS_AS(opt.load_state_dict({{"bogus", zeros({})}}), ValueError);
}

TEST_CASE("a checkpoint keeps every group's options and state") {
  ember_test::TempDir dir;
  auto model = std::make_shared<Linear>(3, 2);
  auto named = model->named_parameters();
  Adam opt({ParamGroup{{named[0].second}, {}}, ParamGroup{{named[1].second}, {{"lr", 0.1}}}},
           AdamOptions{0.01});
  backward(sum(model->forward(ones({4, 3}))));
  opt.step();
  save_checkpoint(dir.file("ck.safetensors"), "linear", *model, opt, 1);
  auto model2 = std::make_shared<Linear>(3, 2);
  auto named2 = model2->named_parameters();
  Adam opt2({ParamGroup{{named2[0].second}, {}}, ParamGroup{{named2[1].second}, {}}},
            AdamOptions{0.01});
  load_checkpoint(dir.file("ck.safetensors"), "linear", *model2, opt2);
  CHECK(opt2.param_groups()[1].lr() == 0.1);
  const NamedTensors a = opt.state_dict(), b = opt2.state_dict();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.to_vector<double>() == b[i].second.to_vector<double>());
  }
}

TEST_CASE("scaled RMSprop and Adagrad steps on the emulator: skipped on inf, no host waits") {
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    Tensor p = param(kStartA, kFloat32).to(kEmu);
    requires_grad_(p);
    std::unique_ptr<Optimizer> opt;
    if (which == 0)
      opt = std::make_unique<RMSprop>(std::vector<Tensor>{p},
                                      RMSpropOptions{0.01, 0.9, 1e-8, 0.0, 0.5, true});
    else
      opt = std::make_unique<Adagrad>(std::vector<Tensor>{p}, AdagradOptions{0.1, 0.5, 0.0, 0.1});
    const Tensor scale = full({}, 4.0, {kFloat32, kEmu});
    const Tensor ok = zeros({}, {kFloat32, kEmu}), bad = full({}, 1.0, {kFloat32, kEmu});
    std::vector<double> x = kStartA, sq(3, 0.0), ga(3, 0.0), buf(3, 0.0), sum(3, 0.1);
    auto scaled_grad = [&](const std::vector<double>& g) {
      std::vector<double> s4(g);
      for (double& v : s4) v *= 4.0;
      set_grad(p, s4);
    };
    scaled_grad(kGrads[0]);
    opt->step(scale, ok);  // the first makes the buffers and the device step count
    if (which == 0)
      rmsprop_rule(x, kGrads[0], sq, ga, buf, RMSpropOptions{0.01, 0.9, 1e-8, 0.0, 0.5, true});
    else
      adagrad_rule(x, kGrads[0], sum, 1, AdagradOptions{0.1, 0.5, 0.0, 0.1});
    const gpu::HostWaits before = gpu::host_waits();
    int t = 1;
    for (size_t s = 1; s < kGrads.size(); ++s) {
      scaled_grad(kGrads[s]);
      opt->step(scale, s == 2 ? bad : ok);  // step 2 overflowed: skipped entirely
      if (s == 2) continue;
      ++t;
      if (which == 0)
        rmsprop_rule(x, kGrads[s], sq, ga, buf, RMSpropOptions{0.01, 0.9, 1e-8, 0.0, 0.5, true});
      else
        adagrad_rule(x, kGrads[s], sum, t, AdagradOptions{0.1, 0.5, 0.0, 0.1});
    }
    const gpu::HostWaits after = gpu::host_waits();
    CHECK(after.device_to_host_copies == before.device_to_host_copies);
    CHECK(after.synchronizations == before.synchronizations);
    check_close(p, x, 1e-5);
    for (const auto& [k, v] : opt->state_dict())
      if (k == "state.0.step") CHECK(v.item<int64_t>() == t);
  }
}

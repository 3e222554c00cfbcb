// The learning-rate schedules (nn/lr_scheduler.h) against PyTorch's rules written out here (the
// closed forms of torch/optim/lr_scheduler.py): per group, over enough steps to pass every
// milestone and phase; OneCycleLR's momentum (SGD) and beta1 (Adam) cycling; ReduceLROnPlateau
// on a metric sequence worked by hand; SequentialLR's restart at the milestone.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "autograd/functions.h"
#include "nn/lr_scheduler.h"
#include "nn/optim.h"
#include "ops/op_test_util.h"

using namespace ember;
using namespace ember::nn;
using ember::test::message_of;

namespace {

constexpr double kPi = 3.14159265358979323846;

Tensor param() {
  Tensor p = zeros({2});
  requires_grad_(p);
  return p;
}

// An SGD with two groups, lrs 0.1 and 0.4.
std::unique_ptr<SGD> two_groups(double momentum = 0.9) {
  return std::make_unique<SGD>(std::vector<ParamGroup>{{{param()}, {}}, {{param()}, {{"lr", 0.4}}}},
                               SGDOptions{0.1, momentum});
}

void check_lrs(const Optimizer& opt, const std::vector<double>& want) {
  REQUIRE(opt.param_groups().size() == want.size());
  for (size_t g = 0; g < want.size(); ++g) {
    CAPTURE(g);
    CHECK(opt.param_groups()[g].lr() == doctest::Approx(want[g]).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR and LambdaLR per group") {
  const double base[2] = {0.1, 0.4};
  for (int which = 0; which < 5; ++which) {
    CAPTURE(which);
    auto opt = two_groups();
    std::unique_ptr<LRScheduler> s;
    if (which == 0) s = std::make_unique<StepLR>(*opt, 3, 0.5);
    if (which == 1) s = std::make_unique<MultiStepLR>(*opt, std::vector<int64_t>{2, 5, 5}, 0.1);
    if (which == 2) s = std::make_unique<ExponentialLR>(*opt, 0.9);
    if (which == 3) s = std::make_unique<CosineAnnealingLR>(*opt, 6, 0.01);
    if (which == 4)
      s = std::make_unique<LambdaLR>(
          *opt, std::vector<LambdaLR::Lambda>{[](int64_t e) { return 1.0 / (1 + e); },
                                              [](int64_t e) { return e < 4 ? 1.0 : 0.0; }});
    for (int64_t e = 0; e <= 9; ++e) {
      CAPTURE(e);
      std::vector<double> want(2);
      for (int g = 0; g < 2; ++g) {
        const double b = base[g];
        if (which == 0) want[g] = b * std::pow(0.5, e / 3);
        if (which == 1) want[g] = b * std::pow(0.1, (e >= 2) + 2 * (e >= 5));
        if (which == 2) want[g] = b * std::pow(0.9, e);
        if (which == 3) want[g] = 0.01 + (b - 0.01) * (1 + std::cos(kPi * e / 6)) / 2;
        if (which == 4) want[g] = b * (g == 0 ? 1.0 / (1 + e) : (e < 4 ? 1.0 : 0.0));
      }
      check_lrs(*opt, want);
      CHECK(s->get_last_lr().size() == 2);
      CHECK(s->get_last_lr()[1] == doctest::Approx(want[1]));
      s->step();
    }
  }
  auto opt = two_groups();
  CHECK_THROWS_AS(LambdaLR(*opt, std::vector<LambdaLR::Lambda>{[](int64_t) { return 1.0; }}),
                  ValueError);
}

// PyTorch's OneCycleLR written out: phases (end step, start and end lr, start and end momentum).
struct Phase {
  double end, lr0, lr1, m0, m1;
};
double anneal(bool cos, double a, double b, double pct) {
  return cos ? b + (a - b) / 2 * (std::cos(kPi * pct) + 1) : (b - a) * pct + a;
}
std::pair<double, double> one_cycle(const std::vector<Phase>& phases, bool cos, int64_t step) {
  double start = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase& p = phases[i];
    if (step <= p.end || i + 1 == phases.size()) {
      const double pct = (step - start) / (p.end - start);
      return {anneal(cos, p.lr0, p.lr1, pct), anneal(cos, p.m0, p.m1, pct)};
    }
    start = p.end;
  }
  return {0, 0};
}

TEST_CASE("OneCycleLR: cos and linear, two and three phases, momentum and Adam's beta1") {
  for (bool three : {false, true}) {
    for (bool cos : {true, false}) {
      for (bool adam : {false, true}) {
        CAPTURE(three);
        CAPTURE(cos);
        CAPTURE(adam);
        std::unique_ptr<Optimizer> opt;
        if (adam)
          opt = std::make_unique<Adam>(std::vector<Tensor>{param()}, AdamOptions{});
        else
          opt = two_groups();
        OneCycleOptions o;
        o.total_steps = 20;
        o.anneal_strategy = cos ? "cos" : "linear";
        o.three_phase = three;
        o.pct_start = 0.25;
        OneCycleLR s(*opt, adam ? std::vector<double>{0.01} : std::vector<double>{1.0, 2.0}, o);
        for (int64_t step = 0; step <= 20; ++step) {
          CAPTURE(step);
          for (size_t g = 0; g < opt->param_groups().size(); ++g) {
            const double max_lr = adam ? 0.01 : (g == 0 ? 1.0 : 2.0);
            const double init = max_lr / 25, min_lr = init / 1e4;
            const std::vector<Phase> ph =
                three ? std::vector<Phase>{{0.25 * 20 - 1, init, max_lr, 0.95, 0.85},
                                           {2 * 0.25 * 20 - 2, max_lr, init, 0.85, 0.95},
                                           {19, init, min_lr, 0.95, 0.95}}
                      : std::vector<Phase>{{0.25 * 20 - 1, init, max_lr, 0.95, 0.85},
                                           {19, max_lr, min_lr, 0.85, 0.95}};
            const auto [lr, m] = one_cycle(ph, cos, step);
            CHECK(opt->param_groups()[g].lr() == doctest::Approx(lr).epsilon(1e-12));
            CHECK(opt->param_groups()[g].get(adam ? "beta1" : "momentum") ==
                  doctest::Approx(m).epsilon(1e-12));
          }
          if (step < 20) s.step();
        }
        CHECK(message_of([&] { s.step(); }) ==
              "OneCycleLR: Tried to step 22 times. The specified number of total steps is 20");
      }
    }
  }
  Adagrad no_momentum({param()});
  CHECK_THROWS_AS(OneCycleLR(no_momentum, 0.1, OneCycleOptions{10}), ValueError);
  OneCycleOptions by_epochs;
  by_epochs.epochs = 3, by_epochs.steps_per_epoch = 4, by_epochs.cycle_momentum = false;
  CHECK(OneCycleLR(no_momentum, 0.1, by_epochs).total_steps() == 12);
}

TEST_CASE("ReduceLROnPlateau: patience, thresholds, cooldown, min_lr and eps") {
  auto opt = two_groups();
  PlateauOptions o;
  o.patience = 1, o.factor = 0.5, o.cooldown = 1, o.min_lrs = {0.02, 0.0};
  ReduceLROnPlateau s(*opt, o);
  // min mode, rel threshold 1e-4: better means < best * (1 - 1e-4).
  const double metrics[] = {1.0, 0.9, 0.9, 0.89995, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95};
  // Worked by hand: bad epochs count to 2 (> patience 1) at epochs 4 and 7 and 10, with one
  // cooldown epoch after each reduction that does not count.
  const double lr0[] = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.02};
  const double lr1[] = {0.4, 0.4, 0.4, 0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.05};
  for (int i = 0; i < 10; ++i) {
    CAPTURE(i);
    s.step(metrics[i]);
    check_lrs(*opt, {lr0[i], lr1[i]});
  }
  CHECK(s.best() == 0.9);
  // max mode with an absolute threshold.
  auto opt2 = two_groups();
  PlateauOptions m;
  m.mode = "max", m.threshold_mode = "abs", m.threshold = 0.1, m.patience = 0;
  ReduceLROnPlateau up(*opt2, m);
  up.step(1.0);  // better than -inf
  check_lrs(*opt2, {0.1, 0.4});
  up.step(1.05);  // not 0.1 better: reduced (patience 0)
  check_lrs(*opt2, {0.01, 0.04});
  up.step(1.2);  // better
  check_lrs(*opt2, {0.01, 0.04});
  CHECK_THROWS_AS(ReduceLROnPlateau(*opt2, PlateauOptions{"min", 1.0}), ValueError);
  CHECK_THROWS_AS(ReduceLROnPlateau(*opt2, PlateauOptions{"up"}), ValueError);
}

TEST_CASE("SequentialLR: a warm-up, then exponential decay restarted at the milestone") {
  auto opt = two_groups();
  LinearWarmupLR warm(*opt, 3, 0.25);
  ExponentialLR decay(*opt, 0.5);  // made second: starts from the groups' initial lrs
  SequentialLR seq(*opt, {&warm, &decay}, {3});
  const double base[2] = {0.1, 0.4};
  for (int64_t e = 0; e <= 7; ++e) {
    CAPTURE(e);
    std::vector<double> want(2);
    for (int g = 0; g < 2; ++g)
      want[g] = e < 3 ? base[g] * (0.25 + 0.75 * e / 3.0) : base[g] * std::pow(0.5, e - 3);
    check_lrs(*opt, want);
    CHECK(seq.get_last_lr()[0] == doctest::Approx(want[0]));
    seq.step();
  }
  CHECK_THROWS_AS(SequentialLR(*opt, {&warm, &decay}, {}), ValueError);
}

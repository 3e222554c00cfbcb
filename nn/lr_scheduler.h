// Learning-rate schedules with PyTorch's rules, per parameter group: StepLR, MultiStepLR,
// ExponentialLR, CosineAnnealingLR, a linear warm-up (PyTorch's LinearLR), LambdaLR, OneCycleLR
// (with momentum cycling), SequentialLR, and ReduceLROnPlateau.
//
// Each schedule is PyTorch's closed form (_get_closed_form_lr) of the epoch count and the group's
// initial lr; stepping one schedule at a time gives PyTorch's learning rates exactly. (PyTorch's
// step() applies a recursive form, which differs only when two schedules drive one optimiser at
// once; the Python schedulers follow that form too.)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/optim.h"

namespace ember::nn {

// Call step() once per epoch (or per iteration for OneCycleLR and warm-ups), after
// optimizer.step(), as in PyTorch. A schedule sets each group's lr from its base lr (the group's
// initial_lr, which the first schedule sets to the group's lr then) and the epoch count;
// construction sets epoch 0's.
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& opt);
  virtual ~LRScheduler() = default;
  void step() { set_epoch(epoch_ + 1); }
  int64_t epoch() const { return epoch_; }
  // ensures: epoch() == e and every group's lr == lr_at(e, group).
  void set_epoch(int64_t e);
  // The lr of group 0 at `epoch`.
  double lr_at(int64_t epoch) const { return lr_at(epoch, 0); }
  virtual double lr_at(int64_t epoch, size_t group) const = 0;
  // The lrs the last step set, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return opt_; }

 protected:
  // Sets epoch 0's lrs; each subclass calls it last in its constructor (a virtual call).
  void start() { set_epoch(0); }
  // Called by set_epoch before the lrs are set (OneCycleLR sets the momentum here).
  virtual void on_epoch(int64_t /*epoch*/) {}
  Optimizer& opt_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t epoch_ = 0;
};

// lr = base * gamma^(epoch / step_size)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t epoch, size_t group) const override;
  using LRScheduler::lr_at;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = base * gamma^(number of milestones <= epoch); milestones increasing.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma = 0.1);
  double lr_at(int64_t epoch, size_t group) const override;
  using LRScheduler::lr_at;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr = base * gamma^epoch
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& opt, double gamma);
  double lr_at(int64_t epoch, size_t group) const override;
  using LRScheduler::lr_at;

 private:
  double gamma_;
};

// lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / t_max)) / 2
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min = 0.0);
  double lr_at(int64_t epoch, size_t group) const override;
  using LRScheduler::lr_at;

 private:
  int64_t t_max_;
  double eta_min_;
};

// Linear warm-up (PyTorch's LinearLR with end_factor 1): the factor goes from start_factor to 1
// over `warmup` steps.
class LinearWarmupLR : public LRScheduler {
 public:
  LinearWarmupLR(Optimizer& opt, int64_t warmup, double start_factor = 1.0 / 3.0);
  double lr_at(int64_t epoch, size_t group) const override;
  using LRScheduler::lr_at;

 private:
  int64_t warmup_;
  double start_factor_;
};

// lr = base * lambda(epoch): one function for every group, or one per group.
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;
  LambdaLR(Optimizer& opt, Lambda lambda);
  // requires: one function per group (ValueError otherwise).
  LambdaLR(Optimizer& opt, std::vector<Lambda> lambdas);
  double lr_at(int64_t epoch, size_t group) const override;
  using LRScheduler::lr_at;

 private:
  std::vector<Lambda> lambdas_;
};

struct OneCycleOptions {
  int64_t total_steps = 0;  // or epochs * steps_per_epoch when 0
  int64_t epochs = 0, steps_per_epoch = 0;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // or "linear"
  bool cycle_momentum = true;
  double base_momentum = 0.85, max_momentum = 0.95;
  double div_factor = 25.0, final_div_factor = 1e4;
  bool three_phase = false;
};

// The 1cycle policy (PyTorch's OneCycleLR): from max_lr / div_factor up to max_lr over pct_start
// of the steps, then down to initial / final_div_factor (three_phase: back to the initial lr
// first, then down); the momentum (or Adam's beta1) cycles the other way between max_momentum
// and base_momentum. Step once per batch. Stepping past total_steps is a ValueError.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, double max_lr, OneCycleOptions o);
  // requires: one max_lr per group.
  OneCycleLR(Optimizer& opt, std::vector<double> max_lrs, OneCycleOptions o);
  double lr_at(int64_t epoch, size_t group) const override;
  using LRScheduler::lr_at;
  // The momentum (or beta1) of group `group` at `epoch` (cycle_momentum only).
  double momentum_at(int64_t epoch, size_t group) const;
  int64_t total_steps() const { return o_.total_steps; }

 private:
  struct Phase {
    double end_step;
    int start_lr, end_lr, start_m, end_m;  // 0 initial, 1 max, 2 min / 0 max, 1 base momentum
  };
  void on_epoch(int64_t epoch) override;
  double anneal(double start, double end, double pct) const;
  template <typename Value>
  double along(int64_t epoch, Value&& value, bool momentum) const;
  OneCycleOptions o_;
  std::vector<double> max_lrs_;
  std::vector<Phase> phases_;
  std::string momentum_key_;  // "momentum" or "beta1"
};

// Runs schedulers one after another: scheduler k from milestone k-1 on, restarted at epoch 0 there
// (PyTorch's SequentialLR). The schedulers must drive `opt`; SequentialLR does not own them.
class SequentialLR {
 public:
  // requires: milestones.size() == schedulers.size() - 1 (ValueError otherwise).
  SequentialLR(Optimizer& opt, std::vector<LRScheduler*> schedulers,
               std::vector<int64_t> milestones);
  void step();
  int64_t epoch() const { return epoch_; }
  const std::vector<double>& get_last_lr() const { return last_lr_; }

 private:
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
  std::vector<double> last_lr_;
  int64_t epoch_ = 0;
};

struct PlateauOptions {
  std::string mode = "min";  // or "max"
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // or "abs"
  int64_t cooldown = 0;
  std::vector<double> min_lrs = {0.0};  // one for every group, or one per group
  double eps = 1e-8;
};

// Lowers each group's lr by `factor` when the metric has not improved for `patience` epochs
// (PyTorch's ReduceLROnPlateau): call step(metric) after each validation.
class ReduceLROnPlateau {
 public:
  ReduceLROnPlateau(Optimizer& opt, PlateauOptions o = {});
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }
  int64_t epoch() const { return epoch_; }

 private:
  bool is_better(double a) const;
  Optimizer& opt_;
  PlateauOptions o_;
  std::vector<double> min_lrs_, last_lr_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, epoch_ = 0;
};

}  // namespace ember::nn

// Learning-rate schedules with PyTorch's rules: StepLR, CosineAnnealingLR and a linear warm-up,
// each setting an optimiser's lr from its initial lr.
#pragma once

#include <cstdint>

#include "nn/optim.h"

namespace ember::nn {

// Learning-rate schedules: call step() once per epoch (or per iteration for warm-up), after
// optimizer.step(), as in PyTorch. Each sets the optimiser's lr from the initial lr.
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& opt) : opt_(opt), base_lr_(opt.lr()) {}
  virtual ~LRScheduler() = default;
  void step() {
    ++epoch_;
    opt_.set_lr(lr_at(epoch_));
  }
  int64_t epoch() const { return epoch_; }
  void set_epoch(int64_t e) {
    epoch_ = e;
    opt_.set_lr(lr_at(epoch_));
  }
  virtual double lr_at(int64_t epoch) const = 0;

 protected:
  Optimizer& opt_;
  double base_lr_;
  int64_t epoch_ = 0;
};

// lr = base * gamma^(epoch / step_size)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t epoch) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / t_max)) / 2
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min = 0.0);
  double lr_at(int64_t epoch) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// Linear warm-up (PyTorch's LinearLR): factor goes from start_factor to 1 over `warmup` steps.
class LinearWarmupLR : public LRScheduler {
 public:
  LinearWarmupLR(Optimizer& opt, int64_t warmup, double start_factor = 1.0 / 3.0);
  double lr_at(int64_t epoch) const override;

 private:
  int64_t warmup_;
  double start_factor_;
};

}  // namespace ember::nn

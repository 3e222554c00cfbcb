// The learning-rate schedules (nn/lr_scheduler.h).
#include "nn/lr_scheduler.h"

#include <algorithm>
#include <cmath>

namespace ember::nn {

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK_VALUE(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
}
double StepLR::lr_at(int64_t e) const {
  return base_lr_ * std::pow(gamma_, static_cast<double>(e / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min)
    : LRScheduler(opt), t_max_(t_max), eta_min_(eta_min) {
  EMBER_CHECK_VALUE(t_max > 0, "CosineAnnealingLR: t_max must be positive, got ", t_max);
}
double CosineAnnealingLR::lr_at(int64_t e) const {
  const double pi = 3.14159265358979323846;
  return eta_min_ +
         (base_lr_ - eta_min_) * (1.0 + std::cos(pi * static_cast<double>(e) / t_max_)) / 2.0;
}

LinearWarmupLR::LinearWarmupLR(Optimizer& opt, int64_t warmup, double start_factor)
    : LRScheduler(opt), warmup_(warmup), start_factor_(start_factor) {
  EMBER_CHECK_VALUE(warmup > 0 && start_factor > 0 && start_factor <= 1,
                    "LinearWarmupLR: expected warmup > 0 and 0 < start_factor <= 1");
  opt_.set_lr(lr_at(0));
}
double LinearWarmupLR::lr_at(int64_t e) const {
  double t = static_cast<double>(std::min(e, warmup_)) / static_cast<double>(warmup_);
  return base_lr_ * (start_factor_ + (1.0 - start_factor_) * t);
}

}  // namespace ember::nn

// The learning-rate schedules (nn/lr_scheduler.h).
#include "nn/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ember::nn {

namespace {
constexpr double kPi = 3.14159265358979323846;

// One value per group: a single value for all, or exactly one each.
template <typename T>
std::vector<T> per_group(const Optimizer& opt, std::vector<T> v, const char* what) {
  const size_t n = opt.param_groups().size();
  if (v.size() == 1 && n != 1) v.assign(n, v[0]);
  EMBER_CHECK_VALUE(v.size() == n, "expected ", n, " values for ", what, ", got ", v.size());
  return v;
}
}  // namespace

LRScheduler::LRScheduler(Optimizer& opt) : opt_(opt) {
  for (ParamGroup& g : opt.param_groups()) {
    if (!g.initial_lr) g.initial_lr = g.lr();
    base_lrs_.push_back(*g.initial_lr);
  }
}

void LRScheduler::set_epoch(int64_t e) {
  on_epoch(e);
  std::vector<double> lrs;
  for (size_t g = 0; g < base_lrs_.size(); ++g) lrs.push_back(lr_at(e, g));
  auto& groups = opt_.param_groups();
  EMBER_CHECK_VALUE(groups.size() == lrs.size(), "lr scheduler: the optimiser has ", groups.size(),
                    " parameter groups, but the schedule was made for ", lrs.size());
  for (size_t g = 0; g < lrs.size(); ++g) groups[g].options["lr"] = lrs[g];
  epoch_ = e;
  last_lr_ = std::move(lrs);
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK_VALUE(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  start();
}
double StepLR::lr_at(int64_t e, size_t g) const {
  return base_lrs_[g] * std::pow(gamma_, static_cast<double>(e / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(opt), milestones_(std::move(milestones)), gamma_(gamma) {
  EMBER_CHECK_VALUE(std::is_sorted(milestones_.begin(), milestones_.end()),
                    "MultiStepLR: milestones must be increasing");
  start();
}
double MultiStepLR::lr_at(int64_t e, size_t g) const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), e) - milestones_.begin();
  return base_lrs_[g] * std::pow(gamma_, static_cast<double>(passed));
}

ExponentialLR::ExponentialLR(Optimizer& opt, double gamma) : LRScheduler(opt), gamma_(gamma) {
  start();
}
double ExponentialLR::lr_at(int64_t e, size_t g) const {
  return base_lrs_[g] * std::pow(gamma_, static_cast<double>(e));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min)
    : LRScheduler(opt), t_max_(t_max), eta_min_(eta_min) {
  EMBER_CHECK_VALUE(t_max > 0, "CosineAnnealingLR: t_max must be positive, got ", t_max);
  start();
}
double CosineAnnealingLR::lr_at(int64_t e, size_t g) const {
  return eta_min_ +
         (base_lrs_[g] - eta_min_) * (1.0 + std::cos(kPi * static_cast<double>(e) / t_max_)) / 2.0;
}

LinearWarmupLR::LinearWarmupLR(Optimizer& opt, int64_t warmup, double start_factor)
    : LRScheduler(opt), warmup_(warmup), start_factor_(start_factor) {
  EMBER_CHECK_VALUE(warmup > 0 && start_factor > 0 && start_factor <= 1,
                    "LinearWarmupLR: expected warmup > 0 and 0 < start_factor <= 1");
  start();
}
double LinearWarmupLR::lr_at(int64_t e, size_t g) const {
  double t = static_cast<double>(std::min(e, warmup_)) / static_cast<double>(warmup_);
  return base_lrs_[g] * (start_factor_ + (1.0 - start_factor_) * t);
}

LambdaLR::LambdaLR(Optimizer& opt, Lambda lambda)
    : LambdaLR(opt, std::vector<Lambda>(opt.param_groups().size(), lambda)) {}

LambdaLR::LambdaLR(Optimizer& opt, std::vector<Lambda> lambdas) : LRScheduler(opt) {
  EMBER_CHECK_VALUE(lambdas.size() == opt.param_groups().size(), "LambdaLR: Expected ",
                    opt.param_groups().size(), " lr_lambdas, but got ", lambdas.size());
  lambdas_ = std::move(lambdas);
  for (const Lambda& f : lambdas_) EMBER_CHECK_VALUE(f != nullptr, "LambdaLR: empty lr_lambda");
  start();
}
double LambdaLR::lr_at(int64_t e, size_t g) const {
  return base_lrs_[g] * lambdas_[g](e);
}

// --- OneCycleLR -----------------------------------------------------------------------------

OneCycleLR::OneCycleLR(Optimizer& opt, double max_lr, OneCycleOptions o)
    : OneCycleLR(opt, std::vector<double>(opt.param_groups().size(), max_lr), std::move(o)) {}

OneCycleLR::OneCycleLR(Optimizer& opt, std::vector<double> max_lrs, OneCycleOptions o)
    : LRScheduler(opt), o_(std::move(o)) {
  if (o_.total_steps <= 0) {
    EMBER_CHECK_VALUE(o_.epochs > 0 && o_.steps_per_epoch > 0,
                      "OneCycleLR: You must define either total_steps OR (epochs AND "
                      "steps_per_epoch), got total_steps ",
                      o_.total_steps, ", epochs ", o_.epochs, ", steps_per_epoch ",
                      o_.steps_per_epoch);
    o_.total_steps = o_.epochs * o_.steps_per_epoch;
  }
  EMBER_CHECK_VALUE(o_.pct_start >= 0 && o_.pct_start <= 1,
                    "OneCycleLR: Expected float between 0 and 1 pct_start, but got ", o_.pct_start);
  EMBER_CHECK_VALUE(o_.anneal_strategy == "cos" || o_.anneal_strategy == "linear",
                    "OneCycleLR: anneal_strategy must by one of 'cos' or 'linear', instead got ",
                    o_.anneal_strategy);
  const double total = static_cast<double>(o_.total_steps), pct = o_.pct_start;
  // Up from the initial lr to max_lr (momentum down), then, with three phases, back to the
  // initial lr (momentum up), then down to min_lr (momentum up, or held at max with three).
  phases_.push_back({pct * total - 1, 0, 1, 0, 1});
  if (o_.three_phase) {
    phases_.push_back({2 * pct * total - 2, 1, 0, 1, 0});
    phases_.push_back({total - 1, 0, 2, 0, 0});
  } else {
    phases_.push_back({total - 1, 1, 2, 1, 0});
  }
  EMBER_CHECK_VALUE(max_lrs.size() == opt.param_groups().size(), "OneCycleLR: expected ",
                    opt.param_groups().size(), " values for max_lr, got ", max_lrs.size());
  max_lrs_ = std::move(max_lrs);
  for (size_t g = 0; g < max_lrs_.size(); ++g) {
    opt.param_groups()[g].initial_lr = max_lrs_[g] / o_.div_factor;
    base_lrs_[g] = max_lrs_[g] / o_.div_factor;
  }
  if (o_.cycle_momentum) {
    const GroupOptions& d = opt.defaults();
    EMBER_CHECK_VALUE(d.count("momentum") || d.count("beta1"),
                      "OneCycleLR: optimizer must support momentum with `cycle_momentum` option "
                      "enabled (",
                      opt.name(), " has neither momentum nor betas)");
    momentum_key_ = d.count("beta1") ? "beta1" : "momentum";
  }
  start();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (o_.anneal_strategy == "cos") return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
  return (end - start) * pct + start;
}

// The phase that holds `epoch`, and the value annealed along it; value(which) gives the
// endpoints (lr: 0 initial, 1 max, 2 min; momentum: 0 max, 1 base).
template <typename Value>
double OneCycleLR::along(int64_t epoch, Value&& value, bool momentum) const {
  EMBER_CHECK_VALUE(epoch <= o_.total_steps, "OneCycleLR: Tried to step ", epoch + 1,
                    " times. The specified number of total steps is ", o_.total_steps);
  double start_step = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& ph = phases_[i];
    if (static_cast<double>(epoch) <= ph.end_step || i + 1 == phases_.size()) {
      const double pct = (static_cast<double>(epoch) - start_step) / (ph.end_step - start_step);
      return momentum ? anneal(value(ph.start_m), value(ph.end_m), pct)
                      : anneal(value(ph.start_lr), value(ph.end_lr), pct);
    }
    start_step = ph.end_step;
  }
  return 0.0;  // not reached: the last phase always matches
}

double OneCycleLR::lr_at(int64_t e, size_t g) const {
  const double initial = max_lrs_[g] / o_.div_factor;
  const double lrs[3] = {initial, max_lrs_[g], initial / o_.final_div_factor};
  return along(
      e, [&](int which) { return lrs[which]; }, false);
}

double OneCycleLR::momentum_at(int64_t e, size_t) const {
  const double ms[2] = {o_.max_momentum, o_.base_momentum};
  return along(
      e, [&](int which) { return ms[which]; }, true);
}

void OneCycleLR::on_epoch(int64_t e) {
  if (!o_.cycle_momentum) return;
  auto& groups = opt_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) groups[g].options[momentum_key_] = momentum_at(e, g);
}

// --- SequentialLR ---------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer& opt, std::vector<LRScheduler*> schedulers,
                           std::vector<int64_t> milestones)
    : schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  EMBER_CHECK_VALUE(!schedulers_.empty(), "SequentialLR: expects at least one scheduler");
  EMBER_CHECK_VALUE(milestones_.size() + 1 == schedulers_.size(),
                    "SequentialLR: Sequential Schedulers expects number of schedulers provided to "
                    "be one more than the number of milestone points, but got number of "
                    "schedulers ",
                    schedulers_.size(), " and the number of milestones to be equal to ",
                    milestones_.size());
  for (LRScheduler* s : schedulers_)
    EMBER_CHECK_VALUE(s != nullptr && &s->optimizer() == &opt,
                      "SequentialLR: each scheduler must drive the optimiser given");
  // Every scheduler set its epoch 0 when made; the first one's is what runs now.
  schedulers_[0]->set_epoch(0);
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++epoch_;
  const size_t idx = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), epoch_) - milestones_.begin());
  LRScheduler* s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == epoch_)
    s->set_epoch(0);
  else
    s->step();
  last_lr_ = s->get_last_lr();
}

// --- ReduceLROnPlateau ----------------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, PlateauOptions o)
    : opt_(opt), o_(std::move(o)) {
  EMBER_CHECK_VALUE(o_.factor < 1.0, "ReduceLROnPlateau: Factor should be < 1.0., got ", o_.factor);
  EMBER_CHECK_VALUE(o_.mode == "min" || o_.mode == "max", "ReduceLROnPlateau: mode ", o_.mode,
                    " is unknown!");
  EMBER_CHECK_VALUE(o_.threshold_mode == "rel" || o_.threshold_mode == "abs",
                    "ReduceLROnPlateau: threshold mode ", o_.threshold_mode, " is unknown!");
  min_lrs_ = per_group(opt, o_.min_lrs, "min_lrs");
  best_ = o_.mode == "min" ? std::numeric_limits<double>::infinity()
                           : -std::numeric_limits<double>::infinity();
  for (const ParamGroup& g : opt.param_groups()) last_lr_.push_back(g.lr());
}

bool ReduceLROnPlateau::is_better(double a) const {
  const bool rel = o_.threshold_mode == "rel";
  if (o_.mode == "min") return rel ? a < best_ * (1.0 - o_.threshold) : a < best_ - o_.threshold;
  return rel ? a > best_ * (o_.threshold + 1.0) : a > best_ + o_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  ++epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  auto& groups = opt_.param_groups();
  if (num_bad_epochs_ > o_.patience) {
    for (size_t g = 0; g < groups.size(); ++g) {
      const double old_lr = groups[g].lr();
      const double new_lr = std::max(old_lr * o_.factor, min_lrs_[g]);
      if (old_lr - new_lr > o_.eps) groups[g].options["lr"] = new_lr;
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const ParamGroup& g : groups) last_lr_.push_back(g.lr());
}

}  // namespace ember::nn

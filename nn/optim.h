// Optimisers with PyTorch's update rules and defaults: SGD (momentum, dampening, nesterov,
// weight decay), Adam and AdamW. Updates are fused per parameter (ops/optim.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace ember::nn {

class Optimizer {
 public:
  // requires: every parameter is a floating leaf that requires grad; all on one device.
  explicit Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  // Applies one update using each parameter's .grad (parameters without a gradient are
  // skipped, as in PyTorch). Runs without recording a graph.
  virtual void step() = 0;
  void zero_grad();
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  const std::vector<Tensor>& params() const { return params_; }

  // Everything needed to resume exactly: per-parameter buffers and step counts, and the lr.
  // Names are "state.<i>.<buffer>" and "lr".
  virtual NamedTensors state_dict() const;
  // requires: a state dict from the same optimiser type over parameters of the same shapes
  // (ValueError / ShapeError naming the key otherwise).
  virtual void load_state_dict(const NamedTensors& state);
  virtual std::string name() const = 0;

 protected:
  // Buffer `name` of parameter i (a handle sharing its data), created zero-filled on first use.
  Tensor buffer(size_t i, const std::string& name);
  std::vector<std::vector<std::pair<std::string, Tensor>>> state_;
  std::vector<int64_t> steps_;
  std::vector<Tensor> params_;
  double lr_;
};

struct SGDOptions {
  double lr = 0.01, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions opts);
  void step() override;
  std::string name() const override { return "SGD"; }

 private:
  SGDOptions opts_;
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions opts, bool decoupled_weight_decay = false);
  void step() override;
  std::string name() const override { return decoupled_ ? "AdamW" : "Adam"; }

 private:
  AdamOptions opts_;
  bool decoupled_;
};

// AdamW: Adam with decoupled weight decay (default 0.01, as PyTorch).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions opts = {1e-3, 0.9, 0.999, 1e-8, 1e-2})
      : Adam(std::move(params), opts, true) {}
};

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

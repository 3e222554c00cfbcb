// Optimisers with PyTorch's update rules and defaults: SGD (momentum, dampening, nesterov,
// weight decay), Adam and AdamW. Updates are fused per parameter (ops/optim.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"
#include "ops/optim.h"

namespace ember::nn {

class Optimizer {
 public:
  // requires: every parameter is a floating leaf that requires grad; all on one device.
  explicit Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  // Applies one update using each parameter's .grad (parameters without a gradient are
  // skipped, as in PyTorch). Runs without recording a graph.
  void step();
  // The loss scaler's step (nn/amp.h), which never waits for the device: skipped entirely
  // (parameters, state and step counts untouched) when found_inf != 0 on the device, and with
  // every gradient divided by grad_scale first when it is defined. Both float32 of one element.
  // The step counts then live on the device until step(), state_dict() or load_state_dict()
  // reads them back.
  void step(const Tensor& grad_scale, const Tensor& found_inf);
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
  struct Scaled {
    Tensor grad_scale, found_inf;
  };
  // One update of every parameter with a gradient; `scaled` null for a plain step.
  virtual void apply(const Scaled* scaled) = 0;
  // What the update ops take for parameter i: the scaler's tensors on its device and its step
  // count on the device (null for a plain step).
  std::unique_ptr<ops::AmpTensors> amp_for(size_t i, const Scaled* scaled);
  // Buffer `name` of parameter i (a handle sharing its data), created zero-filled on first use.
  Tensor buffer(size_t i, const std::string& name);
  // Parameter i's completed steps, read back from the device when scaled steps counted them.
  int64_t steps_of(size_t i) const;
  // The step counts of scaled steps (float64 on each parameter's device; undefined otherwise).
  std::vector<Tensor> device_steps_;
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
  std::string name() const override { return "SGD"; }

 private:
  void apply(const Scaled* scaled) override;
  SGDOptions opts_;
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions opts, bool decoupled_weight_decay = false);
  std::string name() const override { return decoupled_ ? "AdamW" : "Adam"; }

 private:
  void apply(const Scaled* scaled) override;
  AdamOptions opts_;
  bool decoupled_;
};

// AdamW: Adam with decoupled weight decay (default 0.01, as PyTorch).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions opts = {1e-3, 0.9, 0.999, 1e-8, 1e-2})
      : Adam(std::move(params), opts, true) {}
};

}  // namespace ember::nn

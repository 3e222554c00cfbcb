// Optimisers with PyTorch's update rules, defaults and parameter groups: SGD (momentum,
// dampening, nesterov, weight decay, maximize), Adam and AdamW, RMSprop (centered, momentum) and
// Adagrad (lr decay). Updates are fused per parameter (ops/optim.h).
//
// Parameter groups are PyTorch's: each group has its own parameters and its own value of every
// option ("lr", "momentum", "weight_decay", "beta1", ...); options a group does not set come from
// the optimiser's defaults. A group's options may be edited between steps (schedulers do) and
// the next step uses them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "ops/optim.h"

namespace ember::nn {

// A group's options by PyTorch's names; booleans (nesterov, centered, maximize) are 0 or 1, and
// Adam's betas are "beta1" and "beta2".
using GroupOptions = std::map<std::string, double>;

struct ParamGroup {
  ParamGroup() = default;
  ParamGroup(std::vector<Tensor> params_, GroupOptions options_ = {})  // NOLINT: {{a}, {...}}
      : params(std::move(params_)), options(std::move(options_)) {}
  std::vector<Tensor> params;
  GroupOptions options;  // after construction: every option of the optimiser
  // The lr the first schedule found (PyTorch's group["initial_lr"]): schedules made later, say
  // for SequentialLR, start from it too.
  std::optional<double> initial_lr;
  double lr() const;
  // The option `name` (ValueError naming it when the group has none).
  double get(const std::string& name) const;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one update using each parameter's .grad (parameters without a gradient are
  // skipped, as in PyTorch), each by its group's options. Runs without recording a graph.
  void step();
  // The loss scaler's step (nn/amp.h), which never waits for the device: skipped entirely
  // (parameters, state and step counts untouched) when found_inf != 0 on the device, and with
  // every gradient divided by grad_scale first when it is defined. Both float32 of one element.
  // The step counts then live on the device until step(), state_dict() or load_state_dict()
  // reads them back.
  void step(const Tensor& grad_scale, const Tensor& found_inf);
  void zero_grad();

  // requires: parameters that are floating leaves (those that never get a gradient are left
  //           alone), in no other group; options the optimiser knows, with valid values
  //           (ValueError naming the option otherwise).
  // ensures:  a new last group, its missing options taken from the defaults.
  void add_param_group(ParamGroup group);
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const GroupOptions& defaults() const { return defaults_; }
  // The first group's lr; set_lr sets every group's (one schedule for all).
  double lr() const;
  void set_lr(double lr);
  // Every parameter, group by group: parameter i of the state dict is params()[i].
  std::vector<Tensor> params() const;

  // Everything needed to resume exactly, in PyTorch's structure flattened to names:
  // "state.<i>.step" (int64) and "state.<i>.<buffer>" per parameter i, "param_groups.<g>.<option>"
  // (float64) and "param_groups.<g>.params" (int64 indices of the group's parameters).
  virtual NamedTensors state_dict() const;
  // requires: a state dict from the same optimiser type with as many groups of the same sizes and
  //           parameters of the same shapes (ValueError / ShapeError naming the key otherwise).
  //           A state dict with one "lr" instead of groups (older checkpoints) sets every group's.
  // ensures:  nothing changes unless everything loads.
  virtual void load_state_dict(const NamedTensors& state);
  virtual std::string name() const = 0;

 protected:
  explicit Optimizer(GroupOptions defaults) : defaults_(std::move(defaults)) {}
  // The subclasses' constructors add their groups with it, once their own checks can run.
  // requires: at least one parameter ("optimizer got an empty parameter list" otherwise).
  void add_param_groups(std::vector<ParamGroup> groups);
  struct Scaled {
    Tensor grad_scale, found_inf;
  };
  // Throws ValueError naming the optimiser and the option when a value is out of range.
  virtual void check_options(const GroupOptions& o) const = 0;
  // State a parameter has from the start (Adagrad's sum); nothing by default.
  virtual void init_state(size_t /*i*/, const GroupOptions& /*o*/) {}
  // One update of parameter i (flat index) with gradient g (contiguous, p's dtype) by options o.
  // steps_[i] already counts this step when amp is null; amp carries the device step otherwise.
  virtual void update(size_t i, const Tensor& p, const Tensor& g, const GroupOptions& o,
                      const ops::AmpTensors* amp) = 0;
  // Buffer `name` of parameter i (a handle sharing its data), created filled with `fill` on first
  // use.
  Tensor buffer(size_t i, const std::string& name, double fill = 0.0);
  bool buffer_exists(size_t i, const std::string& name) const;
  // Parameter i's completed steps, read back from the device when scaled steps counted them.
  int64_t steps_of(size_t i) const;
  // Parameter i's plain step count (in update(): this step's 1-based number).
  int64_t plain_steps(size_t i) const { return steps_[i]; }

 private:
  void apply(const Scaled* scaled);
  std::unique_ptr<ops::AmpTensors> amp_for(size_t i, const Scaled* scaled);
  GroupOptions defaults_;
  std::vector<ParamGroup> groups_;
  // Per parameter (flat index): the step counts of scaled steps (float64 on its device;
  // undefined otherwise), its buffers and its plain step count.
  std::vector<Tensor> device_steps_;
  std::vector<std::vector<std::pair<std::string, Tensor>>> state_;
  std::vector<int64_t> steps_;
};

struct SGDOptions {
  double lr = 0.01, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false, maximize = false;
  GroupOptions to_map() const;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions opts);
  SGD(std::vector<ParamGroup> groups, SGDOptions defaults);
  std::string name() const override { return "SGD"; }

 private:
  void check_options(const GroupOptions& o) const override;
  void update(size_t i, const Tensor& p, const Tensor& g, const GroupOptions& o,
              const ops::AmpTensors* amp) override;
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool maximize = false;
  GroupOptions to_map() const;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions opts, bool decoupled_weight_decay = false);
  Adam(std::vector<ParamGroup> groups, AdamOptions defaults, bool decoupled_weight_decay = false);
  std::string name() const override { return decoupled_ ? "AdamW" : "Adam"; }

 private:
  void check_options(const GroupOptions& o) const override;
  void update(size_t i, const Tensor& p, const Tensor& g, const GroupOptions& o,
              const ops::AmpTensors* amp) override;
  bool decoupled_;
};

// AdamW: Adam with decoupled weight decay (default 0.01, as PyTorch).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions opts = {1e-3, 0.9, 0.999, 1e-8, 1e-2})
      : Adam(std::move(params), opts, true) {}
  AdamW(std::vector<ParamGroup> groups, AdamOptions defaults = {1e-3, 0.9, 0.999, 1e-8, 1e-2})
      : Adam(std::move(groups), defaults, true) {}
};

struct RMSpropOptions {
  double lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0.0, momentum = 0.0;
  bool centered = false, maximize = false;
  GroupOptions to_map() const;
};

// Buffers "square_avg", "grad_avg" (centered) and "momentum_buffer" (momentum > 0), as PyTorch's.
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, RMSpropOptions opts = {});
  RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults = {});
  std::string name() const override { return "RMSprop"; }

 private:
  void check_options(const GroupOptions& o) const override;
  void update(size_t i, const Tensor& p, const Tensor& g, const GroupOptions& o,
              const ops::AmpTensors* amp) override;
};

struct AdagradOptions {
  double lr = 1e-2, lr_decay = 0.0, weight_decay = 0.0, initial_accumulator_value = 0.0,
         eps = 1e-10;
  bool maximize = false;
  GroupOptions to_map() const;
};

// Buffer "sum", made at construction filled with initial_accumulator_value, as PyTorch's.
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, AdagradOptions opts = {});
  Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults = {});
  std::string name() const override { return "Adagrad"; }

 private:
  void check_options(const GroupOptions& o) const override;
  void init_state(size_t i, const GroupOptions& o) override;
  void update(size_t i, const Tensor& p, const Tensor& g, const GroupOptions& o,
              const ops::AmpTensors* amp) override;
};

}  // namespace ember::nn

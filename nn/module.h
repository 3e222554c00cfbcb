// Module: the base of every layer and model. Holds named parameters, buffers and child modules,
// and gives PyTorch-style traversal, train/eval, device moves and state dicts.
//
// Parameters and buffers are registered once; the Tensor a layer keeps (e.g. `weight`) and the
// one in the registry are the same handle, so to() (which swaps the data in place with
// Tensor::set_data) and load_state_dict() are seen by the layer.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace ember::nn {


struct LoadResult {
  std::vector<std::string> missing_keys, unexpected_keys;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  virtual ~Module() = default;

  // Single-input modules override this; the default says the module takes no single input.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  // Type name shown by repr() ("Linear") and extra details ("in_features=4, ...").
  virtual std::string name() const = 0;
  virtual std::string extra_repr() const { return ""; }
  // The module tree, printed as PyTorch does.
  std::string repr(int indent = 0) const;

  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  // This module ("") and every descendant, depth first, with dotted names.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves every parameter and buffer (buffers keep their dtype when moving dtype: running
  // statistics and counters stay as they are unless floating).
  void to(Device device);
  void to(DType dtype);
  void zero_grad();

  // Parameters and buffers with dotted names ("features.0.weight").
  NamedTensors state_dict() const;
  // Copies values in by name. strict: missing or unexpected keys are a ValueError listing them;
  // a shape mismatch is always a ShapeError naming the key and both shapes. Values are
  // converted to each parameter's dtype and device.
  LoadResult load_state_dict(const NamedTensors& state, bool strict = true);

 protected:
  // Registers a parameter (it becomes a leaf that requires grad) and returns the same handle.
  Tensor register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, Tensor t);
  // Removes a registered parameter. requires: one of that name (ValueError otherwise).
  void unregister_parameter(const std::string& name);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }
  // A name registered before keeps its place and gets the new module.
  void add_child(const std::string& name, std::shared_ptr<Module> m);

 private:
  static void check_name(const std::string& name, const char* what);
  void collect(const std::string& prefix, bool params, bool recurse, NamedTensors& out) const;

  NamedTensors params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

using ModulePtr = std::shared_ptr<Module>;

// Runs modules in order, each on the previous one's output. Children are named "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<ModulePtr> modules);
  void push_back(ModulePtr m);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Sequential"; }
  size_t size() const { return modules_.size(); }
  const ModulePtr& operator[](size_t i) const { return modules_.at(i); }

 private:
  std::vector<ModulePtr> modules_;
};

}  // namespace ember::nn

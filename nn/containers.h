// Containers and the identity layer: ModuleList and ModuleDict hold modules (registered as
// children, so their parameters, buffers and state-dict keys are PyTorch's: "layers.0.weight",
// "blocks.encoder.bias"); Identity returns its input.
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"

namespace ember::nn {

class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string name() const override { return "Identity"; }
};

// Modules by position, children named "0", "1", ... It is not callable itself (forward raises
// ValueError, as Module's default): iterate it.
class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<ModulePtr> modules);
  void push_back(ModulePtr m);
  size_t size() const { return modules_.size(); }
  // requires: i < size() (IndexError otherwise).
  const ModulePtr& operator[](size_t i) const;
  std::vector<ModulePtr>::const_iterator begin() const { return modules_.begin(); }
  std::vector<ModulePtr>::const_iterator end() const { return modules_.end(); }
  std::string name() const override { return "ModuleList"; }

 private:
  std::vector<ModulePtr> modules_;
};

// Modules by name, in insertion order; inserting a name again replaces its module.
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  explicit ModuleDict(const std::vector<std::pair<std::string, ModulePtr>>& modules);
  void insert(const std::string& key, ModulePtr m);
  bool contains(const std::string& key) const;
  // requires: the key is present (IndexError naming it otherwise).
  const ModulePtr& operator[](const std::string& key) const;
  std::vector<std::string> keys() const;
  size_t size() const { return items_.size(); }
  std::string name() const override { return "ModuleDict"; }

 private:
  std::vector<std::pair<std::string, ModulePtr>> items_;
};

}  // namespace ember::nn

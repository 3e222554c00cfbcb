#include "nn/module.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"

namespace ember::nn {

Tensor Module::forward(const Tensor&) {
  EMBER_THROW(ValueError, name(), " does not take a single tensor input");
}

void Module::check_name(const std::string& name, const char* what) {
  EMBER_CHECK_VALUE(!name.empty() && name.find('.') == std::string::npos,
                    "register_", what, ": name '", name, "' must be non-empty and contain no '.'");
}

Tensor Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_name(name, "parameter");
  for (const auto& [n, p] : params_)
    EMBER_CHECK_VALUE(n != name, "register_parameter: a parameter named '", name, "' already exists");
  if (requires_grad) requires_grad_(t);
  params_.emplace_back(name, t);
  return t;
}

void Module::unregister_parameter(const std::string& name) {
  auto it =
      std::find_if(params_.begin(), params_.end(), [&](const auto& p) { return p.first == name; });
  EMBER_CHECK_VALUE(it != params_.end(), "unregister_parameter: no parameter named '", name, "'");
  params_.erase(it);
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  check_name(name, "buffer");
  buffers_.emplace_back(name, t);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  check_name(name, "module");
  EMBER_CHECK_VALUE(m != nullptr, "register_module: module '", name, "' is null");
  for (auto& [n, c] : children_)
    if (n == name) {  // registering a name again replaces its module, as PyTorch's
      c = std::move(m);
      return;
    }
  children_.emplace_back(name, std::move(m));
}

void Module::collect(const std::string& prefix, bool params, bool recurse,
                     NamedTensors& out) const {
  for (const auto& [n, t] : params ? params_ : buffers_) out.emplace_back(prefix + n, t);
  if (!recurse) return;
  for (const auto& [n, c] : children_) c->collect(prefix + n + ".", params, true, out);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  collect("", true, recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  collect("", false, recurse, out);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  out.emplace_back("", shared_from_this());
  for (const auto& [n, c] : children_)
    for (auto& [cn, cm] : c->named_modules()) out.emplace_back(cn.empty() ? n : n + "." + cn, cm);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

void Module::to(Device device) {
  NoGradGuard g;
  for (auto* list : {&params_, &buffers_})
    for (auto& [n, t] : *list) t.set_data(t.to(device));
  for (auto& [n, c] : children_) c->to(device);
}

void Module::to(DType dtype) {
  EMBER_CHECK_DTYPE(is_floating(dtype), "Module::to: expected a floating dtype, got ", dtype);
  NoGradGuard g;
  for (auto* list : {&params_, &buffers_})
    for (auto& [n, t] : *list)
      if (is_floating(t.dtype())) t.set_data(t.to(dtype));
  for (auto& [n, c] : children_) c->to(dtype);
}

void Module::zero_grad() {
  for (auto& [n, t] : named_parameters()) ember::zero_grad(t);
}

NamedTensors Module::state_dict() const {
  NamedTensors out = named_parameters();
  NamedTensors b = named_buffers();
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

LoadResult Module::load_state_dict(const NamedTensors& state, bool strict) {
  std::map<std::string, const Tensor*> given;
  for (const auto& [n, t] : state) given[n] = &t;
  LoadResult r;
  NoGradGuard g;
  std::set<std::string> used;
  NamedTensors mine = state_dict();
  for (auto& [n, t] : mine) {
    auto it = given.find(n);
    if (it == given.end()) {
      r.missing_keys.push_back(n);
      continue;
    }
    const Tensor& src = *it->second;
    EMBER_CHECK_SHAPE(src.shape() == t.shape(), "load_state_dict: '", n, "' has shape ",
                      src.shape(), " in the state dict but ", t.shape(), " in the ", name(),
                      " model (a checkpoint from another model?)");
    used.insert(n);
  }
  for (const auto& [n, t] : state)
    if (!used.count(n) && std::find(r.missing_keys.begin(), r.missing_keys.end(), n) == r.missing_keys.end())
      r.unexpected_keys.push_back(n);
  if (strict && (!r.missing_keys.empty() || !r.unexpected_keys.empty())) {
    std::ostringstream os;
    os << "load_state_dict: the state dict does not match the " << name() << " model.";
    auto list = [&os](const char* what, const std::vector<std::string>& keys) {
      if (keys.empty()) return;
      os << " " << what << " keys:";
      for (size_t i = 0; i < keys.size() && i < 10; ++i) os << " '" << keys[i] << "'";
      if (keys.size() > 10) os << " and " << keys.size() - 10 << " more";
      os << ".";
    };
    list("Missing", r.missing_keys);
    list("Unexpected", r.unexpected_keys);
    os << " Pass strict=false to load the keys that match.";
    throw ValueError(os.str());
  }
  // Checked everything first, so a failed load changes nothing.
  for (auto& [n, t] : mine)
    if (used.count(n)) t.copy_(*given[n]);
  return r;
}

std::string Module::repr(int indent) const {
  std::ostringstream os;
  os << name() << "(" << extra_repr();
  if (!children_.empty()) {
    os << "\n";
    for (const auto& [n, c] : children_)
      os << std::string(indent + 2, ' ') << "(" << n << "): " << c->repr(indent + 2) << "\n";
    os << std::string(indent, ' ');
  }
  os << ")";
  return os.str();
}

Sequential::Sequential(std::vector<ModulePtr> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(ModulePtr m) {
  add_child(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& m : modules_) h = m->forward(h);
  return h;
}

}  // namespace ember::nn

// The optimisers (nn/optim.h): parameter groups and state, then the fused update ops.
#include "nn/optim.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "ops/optim.h"

namespace ember::nn {

double ParamGroup::lr() const {
  return get("lr");
}

double ParamGroup::get(const std::string& name) const {
  auto it = options.find(name);
  EMBER_CHECK_VALUE(it != options.end(), "parameter group has no option '", name, "'");
  return it->second;
}

namespace {

std::string option_names(const GroupOptions& o) {
  std::string s;
  for (const auto& kv : o) s += (s.empty() ? "" : ", ") + kv.first;
  return s;
}

Tensor checked_grad(const Tensor& p, size_t i, const std::string& opt) {
  Tensor g = grad(p);
  if (!g.defined()) return g;
  EMBER_CHECK_SHAPE(g.shape() == p.shape(), opt, ": gradient of parameter ", i, " has shape ",
                    g.shape(), ", expected ", p.shape());
  EMBER_CHECK_DEVICE(g.device() == p.device(), opt, ": gradient of parameter ", i, " is on ",
                     g.device(), " but the parameter is on ", p.device());
  return g.to(p.dtype()).contiguous();
}

// The index in "<prefix><index>.<rest>", or nullopt when the key has another form.
std::optional<size_t> index_of(const std::string& key, const std::string& prefix,
                               std::string* rest) {
  if (key.rfind(prefix, 0) != 0) return std::nullopt;
  const size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos) return std::nullopt;
  const std::string idx = key.substr(prefix.size(), dot - prefix.size());
  if (idx.empty() || idx.size() > 9 || idx.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  *rest = key.substr(dot + 1);
  return std::stoul(idx);
}

bool flag(const GroupOptions& o, const char* name) {
  return o.at(name) != 0.0;
}

}  // namespace

// --- groups ---------------------------------------------------------------------------------

void Optimizer::add_param_groups(std::vector<ParamGroup> groups) {
  size_t n = 0;
  for (const ParamGroup& g : groups) n += g.params.size();
  EMBER_CHECK_VALUE(n > 0, name(), ": optimizer got an empty parameter list");
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  const std::string opt = name();
  for (const auto& kv : group.options)
    EMBER_CHECK_VALUE(defaults_.count(kv.first) != 0, opt, ": unknown option '", kv.first,
                      "' in a parameter group (", opt, " has ", option_names(defaults_), ")");
  for (const auto& kv : defaults_) group.options.emplace(kv.first, kv.second);
  check_options(group.options);
  const std::vector<Tensor> existing = params();
  for (size_t j = 0; j < group.params.size(); ++j) {
    const Tensor& p = group.params[j];
    const size_t i = existing.size() + j;
    EMBER_CHECK_VALUE(p.defined() && is_leaf(p), opt, ": parameter ", i,
                      " is not a leaf tensor (can't optimize a non-leaf Tensor)");
    EMBER_CHECK_DTYPE(is_floating(p.dtype()), opt, ": parameter ", i, " has dtype ", p.dtype(),
                      "; expected a floating dtype");
    auto same = [&](const Tensor& q) { return q.impl() == p.impl(); };
    EMBER_CHECK_VALUE(std::none_of(existing.begin(), existing.end(), same) &&
                          std::none_of(group.params.begin(), group.params.begin() + j, same),
                      opt, ": some parameters appear in more than one parameter group");
  }
  const size_t first = existing.size(), total = first + group.params.size();
  device_steps_.resize(total);
  state_.resize(total);
  steps_.resize(total, 0);
  groups_.push_back(std::move(group));
  for (size_t i = first; i < total; ++i) init_state(i, groups_.back().options);
}

double Optimizer::lr() const {
  EMBER_CHECK_VALUE(!groups_.empty(), name(), ": no parameter groups");
  return groups_[0].lr();
}

void Optimizer::set_lr(double lr) {
  EMBER_CHECK_VALUE(lr >= 0.0, name(), ": Invalid learning rate: ", lr);
  for (ParamGroup& g : groups_) g.options["lr"] = lr;
}

std::vector<Tensor> Optimizer::params() const {
  std::vector<Tensor> all;
  for (const ParamGroup& g : groups_) all.insert(all.end(), g.params.begin(), g.params.end());
  return all;
}

// --- steps ----------------------------------------------------------------------------------

void Optimizer::step() {
  for (size_t i = 0; i < device_steps_.size(); ++i) {
    if (!device_steps_[i].defined()) continue;
    steps_[i] = steps_of(i);  // back from the device: plain steps count on the host
    device_steps_[i] = Tensor();
  }
  NoGradGuard ng;
  apply(nullptr);
}

void Optimizer::step(const Tensor& grad_scale, const Tensor& found_inf) {
  EMBER_CHECK_VALUE(found_inf.defined(), name(), ": a scaled step needs found_inf");
  NoGradGuard ng;
  const Scaled s{grad_scale, found_inf};
  apply(&s);
}

void Optimizer::apply(const Scaled* scaled) {
  size_t count = 0;
  for (const ParamGroup& grp : groups_) count += grp.params.size();
  EMBER_CHECK_VALUE(count == steps_.size(), name(), ": the groups hold ", count,
                    " parameters but the optimiser was given ", steps_.size(),
                    "; add parameters with add_param_group");
  size_t i = 0;
  for (const ParamGroup& grp : groups_) {
    for (const Tensor& p : grp.params) {
      const size_t idx = i++;
      const Tensor g = checked_grad(p, idx, name());
      if (!g.defined()) continue;
      EMBER_CHECK_VALUE(p.is_contiguous(), name(), ": parameter ", idx, " is not contiguous");
      const std::unique_ptr<ops::AmpTensors> amp = amp_for(idx, scaled);
      if (!amp) ++steps_[idx];
      update(idx, p, g, grp.options, amp.get());
    }
  }
}

std::unique_ptr<ops::AmpTensors> Optimizer::amp_for(size_t i, const Scaled* scaled) {
  if (scaled == nullptr) return nullptr;
  const Device dev = params()[i].device();
  auto on_dev = [&](const Tensor& t) { return t.defined() && t.device() != dev ? t.to(dev) : t; };
  if (!device_steps_[i].defined())
    device_steps_[i] = full({}, static_cast<double>(steps_[i]), {kFloat64, dev});
  auto a = std::make_unique<ops::AmpTensors>();
  a->grad_scale = on_dev(scaled->grad_scale);
  a->found_inf = on_dev(scaled->found_inf);
  a->step = device_steps_[i];
  return a;
}

int64_t Optimizer::steps_of(size_t i) const {
  return device_steps_[i].defined() ? static_cast<int64_t>(device_steps_[i].item()) : steps_[i];
}

void Optimizer::zero_grad() {
  for (ParamGroup& g : groups_)
    for (Tensor& p : g.params) ember::zero_grad(p);
}

bool Optimizer::buffer_exists(size_t i, const std::string& name) const {
  for (const auto& kv : state_[i])
    if (kv.first == name) return true;
  return false;
}

Tensor Optimizer::buffer(size_t i, const std::string& name, double fill) {
  for (auto& [n, t] : state_[i])
    if (n == name) return t;
  const Tensor p = params()[i];
  state_[i].emplace_back(
      name, fill == 0.0 ? zeros_like(p) : full(p.shape(), fill, {p.dtype(), p.device()}));
  return state_[i].back().second;
}

// --- state dicts ----------------------------------------------------------------------------

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  int64_t first = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    for (const auto& [k, v] : groups_[g].options)
      out.emplace_back(prefix + k, full({}, v, kFloat64));
    std::vector<int64_t> idx(groups_[g].params.size());
    for (size_t j = 0; j < idx.size(); ++j) idx[j] = first + static_cast<int64_t>(j);
    first += static_cast<int64_t>(idx.size());
    out.emplace_back(prefix + "params", from_vector(idx));
  }
  for (size_t i = 0; i < state_.size(); ++i) {
    const std::string prefix = "state." + std::to_string(i) + ".";
    out.emplace_back(prefix + "step", full({}, static_cast<double>(steps_of(i)), kInt64));
    for (const auto& [n, t] : state_[i]) out.emplace_back(prefix + n, t.to(kCPU));
  }
  return out;
}

void Optimizer::load_state_dict(const NamedTensors& state) {
  const std::string opt = name();
  const std::vector<Tensor> ps = params();
  std::vector<std::vector<std::pair<std::string, Tensor>>> fresh(ps.size());
  std::vector<int64_t> steps(ps.size(), 0);
  std::vector<GroupOptions> options;
  for (const ParamGroup& g : groups_) options.push_back(g.options);
  std::vector<bool> group_seen(groups_.size(), false);
  bool any_group = false;
  std::optional<double> legacy_lr;
  for (const auto& [key, t] : state) {
    std::string rest;
    if (key == "lr") {
      legacy_lr = t.item();
    } else if (auto g = index_of(key, "param_groups.", &rest)) {
      any_group = true;
      EMBER_CHECK_VALUE(*g < groups_.size(), opt,
                        " load_state_dict: loaded state dict has a different number of parameter "
                        "groups (it has group ",
                        *g, ", the optimiser ", groups_.size(), ")");
      group_seen[*g] = true;
      if (rest == "params") {
        EMBER_CHECK_VALUE(t.numel() == static_cast<int64_t>(groups_[*g].params.size()), opt,
                          " load_state_dict: loaded state dict contains a parameter group that "
                          "doesn't match the size of optimizer's group (group ",
                          *g, ": ", t.numel(), " parameters, expected ", groups_[*g].params.size(),
                          ")");
      } else {
        EMBER_CHECK_VALUE(defaults_.count(rest) != 0, opt, " load_state_dict: unexpected option '",
                          key, "' (", opt, " has ", option_names(defaults_), ")");
        EMBER_CHECK_SHAPE(t.numel() == 1, opt, " load_state_dict: '", key,
                          "' must hold one number, got shape ", t.shape());
        options[*g][rest] = t.item();
      }
    } else if (auto i = index_of(key, "state.", &rest)) {
      EMBER_CHECK_VALUE(*i < ps.size(), opt, " load_state_dict: key '", key, "' names parameter ",
                        *i, ", but ", opt, " has ", ps.size(), " parameters");
      if (rest == "step") {
        steps[*i] = t.item<int64_t>();
      } else {
        EMBER_CHECK_SHAPE(t.shape() == ps[*i].shape(), opt, " load_state_dict: '", key,
                          "' has shape ", t.shape(), " but parameter ", *i, " has shape ",
                          ps[*i].shape());
        fresh[*i].emplace_back(rest, t.to(ps[*i].device(), ps[*i].dtype()).clone());
      }
    } else {
      EMBER_THROW(ValueError, opt, " load_state_dict: unexpected key '", key, "'");
    }
  }
  if (any_group)
    for (size_t g = 0; g < group_seen.size(); ++g)
      EMBER_CHECK_VALUE(group_seen[g], opt,
                        " load_state_dict: loaded state dict has a different number of parameter "
                        "groups (none for group ",
                        g, " of ", groups_.size(), ")");
  if (legacy_lr)
    for (GroupOptions& o : options) o["lr"] = *legacy_lr;
  for (const GroupOptions& o : options) check_options(o);
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = options[g];
  state_ = std::move(fresh);
  steps_ = std::move(steps);
  device_steps_.assign(ps.size(), Tensor());
}

// --- SGD ------------------------------------------------------------------------------------

GroupOptions SGDOptions::to_map() const {
  return {{"lr", lr},
          {"momentum", momentum},
          {"dampening", dampening},
          {"weight_decay", weight_decay},
          {"nesterov", nesterov ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

SGD::SGD(std::vector<Tensor> params, SGDOptions opts)
    : SGD({ParamGroup{std::move(params), {}}}, opts) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults) : Optimizer(defaults.to_map()) {
  add_param_groups(std::move(groups));
}

void SGD::check_options(const GroupOptions& o) const {
  EMBER_CHECK_VALUE(o.at("lr") >= 0, "SGD: Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK_VALUE(o.at("momentum") >= 0, "SGD: Invalid momentum value: ", o.at("momentum"));
  EMBER_CHECK_VALUE(o.at("weight_decay") >= 0,
                    "SGD: Invalid weight_decay value: ", o.at("weight_decay"));
  EMBER_CHECK_VALUE(!flag(o, "nesterov") || (o.at("momentum") > 0 && o.at("dampening") == 0),
                    "SGD: Nesterov momentum requires a momentum and zero dampening");
}

void SGD::update(size_t i, const Tensor& p, const Tensor& g, const GroupOptions& o,
                 const ops::AmpTensors* amp) {
  ops::SgdParams s;
  s.lr = o.at("lr"), s.momentum = o.at("momentum"), s.dampening = o.at("dampening");
  s.weight_decay = o.at("weight_decay"), s.nesterov = flag(o, "nesterov");
  s.maximize = flag(o, "maximize");
  Tensor buf;
  if (s.momentum != 0.0) {
    const bool fresh = !buffer_exists(i, "momentum_buffer");
    buf = buffer(i, "momentum_buffer");
    // The buffer starts as the first gradient (PyTorch), also when momentum is turned on later.
    s.first_step = fresh || plain_steps(i) == 1;
  }
  ops::sgd_step_(p, g, buf, s, "SGD", amp);
}

// --- Adam / AdamW ---------------------------------------------------------------------------

GroupOptions AdamOptions::to_map() const {
  return {{"lr", lr},
          {"beta1", beta1},
          {"beta2", beta2},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"maximize", maximize ? 1.0 : 0.0}};
}

Adam::Adam(std::vector<Tensor> params, AdamOptions opts, bool decoupled)
    : Adam({ParamGroup{std::move(params), {}}}, opts, decoupled) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults, bool decoupled)
    : Optimizer(defaults.to_map()), decoupled_(decoupled) {
  add_param_groups(std::move(groups));
}

void Adam::check_options(const GroupOptions& o) const {
  const std::string n = name();
  EMBER_CHECK_VALUE(o.at("lr") >= 0, n, ": Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK_VALUE(o.at("eps") >= 0, n, ": Invalid epsilon value: ", o.at("eps"));
  EMBER_CHECK_VALUE(o.at("beta1") >= 0 && o.at("beta1") < 1, n,
                    ": Invalid beta parameter at index 0: ", o.at("beta1"));
  EMBER_CHECK_VALUE(o.at("beta2") >= 0 && o.at("beta2") < 1, n,
                    ": Invalid beta parameter at index 1: ", o.at("beta2"));
  EMBER_CHECK_VALUE(o.at("weight_decay") >= 0, n,
                    ": Invalid weight_decay value: ", o.at("weight_decay"));
}

void Adam::update(size_t i, const Tensor& p, const Tensor& g, const GroupOptions& o,
                  const ops::AmpTensors* amp) {
  const Tensor m = buffer(i, "exp_avg"), v = buffer(i, "exp_avg_sq");
  ops::AdamParams s;
  s.lr = o.at("lr"), s.beta1 = o.at("beta1"), s.beta2 = o.at("beta2"), s.eps = o.at("eps");
  s.weight_decay = o.at("weight_decay"), s.decoupled = decoupled_;
  s.maximize = flag(o, "maximize"), s.step = plain_steps(i);
  ops::adam_step_(p, g, m, v, s, decoupled_ ? "AdamW" : "Adam", amp);
}

// --- RMSprop --------------------------------------------------------------------------------

GroupOptions RMSpropOptions::to_map() const {
  return {{"lr", lr},
          {"alpha", alpha},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"momentum", momentum},
          {"centered", centered ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions opts)
    : RMSprop({ParamGroup{std::move(params), {}}}, opts) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults)
    : Optimizer(defaults.to_map()) {
  add_param_groups(std::move(groups));
}

void RMSprop::check_options(const GroupOptions& o) const {
  EMBER_CHECK_VALUE(o.at("lr") >= 0, "RMSprop: Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK_VALUE(o.at("eps") >= 0, "RMSprop: Invalid epsilon value: ", o.at("eps"));
  EMBER_CHECK_VALUE(o.at("momentum") >= 0, "RMSprop: Invalid momentum value: ", o.at("momentum"));
  EMBER_CHECK_VALUE(o.at("weight_decay") >= 0,
                    "RMSprop: Invalid weight_decay value: ", o.at("weight_decay"));
  EMBER_CHECK_VALUE(o.at("alpha") >= 0, "RMSprop: Invalid alpha value: ", o.at("alpha"));
}

void RMSprop::update(size_t i, const Tensor& p, const Tensor& g, const GroupOptions& o,
                     const ops::AmpTensors* amp) {
  ops::RmspropParams s;
  s.lr = o.at("lr"), s.alpha = o.at("alpha"), s.eps = o.at("eps");
  s.weight_decay = o.at("weight_decay"), s.momentum = o.at("momentum");
  s.centered = flag(o, "centered"), s.maximize = flag(o, "maximize");
  const Tensor sq = buffer(i, "square_avg");
  const Tensor ga = s.centered ? buffer(i, "grad_avg") : Tensor();
  const Tensor buf = s.momentum > 0 ? buffer(i, "momentum_buffer") : Tensor();
  ops::rmsprop_step_(p, g, sq, ga, buf, s, "RMSprop", amp);
}

// --- Adagrad --------------------------------------------------------------------------------

GroupOptions AdagradOptions::to_map() const {
  return {{"lr", lr},
          {"lr_decay", lr_decay},
          {"weight_decay", weight_decay},
          {"initial_accumulator_value", initial_accumulator_value},
          {"eps", eps},
          {"maximize", maximize ? 1.0 : 0.0}};
}

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions opts)
    : Adagrad({ParamGroup{std::move(params), {}}}, opts) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults)
    : Optimizer(defaults.to_map()) {
  add_param_groups(std::move(groups));
}

void Adagrad::check_options(const GroupOptions& o) const {
  EMBER_CHECK_VALUE(o.at("lr") >= 0, "Adagrad: Invalid learning rate: ", o.at("lr"));
  EMBER_CHECK_VALUE(o.at("lr_decay") >= 0, "Adagrad: Invalid lr_decay value: ", o.at("lr_decay"));
  EMBER_CHECK_VALUE(o.at("weight_decay") >= 0,
                    "Adagrad: Invalid weight_decay value: ", o.at("weight_decay"));
  EMBER_CHECK_VALUE(
      o.at("initial_accumulator_value") >= 0,
      "Adagrad: Invalid initial_accumulator_value value: ", o.at("initial_accumulator_value"));
  EMBER_CHECK_VALUE(o.at("eps") >= 0, "Adagrad: Invalid epsilon value: ", o.at("eps"));
}

void Adagrad::init_state(size_t i, const GroupOptions& o) {
  buffer(i, "sum", o.at("initial_accumulator_value"));
}

void Adagrad::update(size_t i, const Tensor& p, const Tensor& g, const GroupOptions& o,
                     const ops::AmpTensors* amp) {
  ops::AdagradParams s;
  s.lr = o.at("lr"), s.lr_decay = o.at("lr_decay"), s.weight_decay = o.at("weight_decay");
  s.eps = o.at("eps"), s.maximize = flag(o, "maximize"), s.step = plain_steps(i);
  ops::adagrad_step_(p, g, buffer(i, "sum", o.at("initial_accumulator_value")), s, "Adagrad", amp);
}

}  // namespace ember::nn

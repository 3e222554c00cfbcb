// The optimisers (nn/optim.h): parameter checks and state, then the fused update ops.
#include "nn/optim.h"

#include <cmath>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "ops/optim.h"

namespace ember::nn {

Optimizer::Optimizer(std::vector<Tensor> params, double lr)
    : device_steps_(params.size()),
      state_(params.size()),
      steps_(params.size(), 0),
      params_(std::move(params)),
      lr_(lr) {
  EMBER_CHECK_VALUE(lr >= 0.0, "optimizer: expected lr >= 0, got ", lr);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    EMBER_CHECK_VALUE(p.defined() && p.requires_grad() && is_leaf(p), "optimizer: parameter ", i,
                      " must be a leaf tensor that requires grad");
    EMBER_CHECK_DTYPE(is_floating(p.dtype()), "optimizer: parameter ", i, " has dtype ", p.dtype(),
                      "; expected a floating dtype");
    EMBER_CHECK_DEVICE(p.device() == params_[0].device(), "optimizer: parameter ", i, " is on ",
                       p.device(), " but parameter 0 is on ", params_[0].device());
  }
}

void Optimizer::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
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

std::unique_ptr<ops::AmpTensors> Optimizer::amp_for(size_t i, const Scaled* scaled) {
  if (scaled == nullptr) return nullptr;
  const Device dev = params_[i].device();
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
  for (Tensor& p : params_) ember::zero_grad(p);
}

Tensor Optimizer::buffer(size_t i, const std::string& name) {
  for (auto& [n, t] : state_[i])
    if (n == name) return t;
  state_[i].emplace_back(name, zeros_like(params_[i]));
  return state_[i].back().second;
}

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  out.emplace_back("lr", full({}, lr_, kFloat64));
  for (size_t i = 0; i < params_.size(); ++i) {
    std::string prefix = "state." + std::to_string(i) + ".";
    out.emplace_back(prefix + "step", full({}, static_cast<double>(steps_of(i)), kInt64));
    for (const auto& [n, t] : state_[i]) out.emplace_back(prefix + n, t.to(kCPU));
  }
  return out;
}

void Optimizer::load_state_dict(const NamedTensors& state) {
  std::vector<std::vector<std::pair<std::string, Tensor>>> fresh(params_.size());
  std::vector<int64_t> steps(params_.size(), 0);
  double lr = lr_;
  for (const auto& [key, t] : state) {
    if (key == "lr") {
      lr = t.item();
      continue;
    }
    // "state.<i>.<name>"
    size_t a = key.find('.'), b = key.find('.', a + 1);
    EMBER_CHECK_VALUE(key.rfind("state.", 0) == 0 && b != std::string::npos,
                      "optimizer load_state_dict: unexpected key '", key, "' for ", name());
    std::string idx = key.substr(a + 1, b - a - 1), buf = key.substr(b + 1);
    EMBER_CHECK_VALUE(!idx.empty() && idx.find_first_not_of("0123456789") == std::string::npos &&
                          std::stoul(idx) < params_.size(),
                      "optimizer load_state_dict: key '", key, "' names parameter ", idx, ", but ",
                      name(), " has ", params_.size(), " parameters");
    size_t i = std::stoul(idx);
    if (buf == "step") {
      steps[i] = t.item<int64_t>();
    } else {
      EMBER_CHECK_SHAPE(t.shape() == params_[i].shape(), "optimizer load_state_dict: '", key,
                        "' has shape ", t.shape(), " but parameter ", i, " has shape ",
                        params_[i].shape());
      fresh[i].emplace_back(buf, t.to(params_[i].device(), params_[i].dtype()).clone());
    }
  }
  state_ = std::move(fresh);
  steps_ = std::move(steps);
  device_steps_.assign(params_.size(), Tensor());
  lr_ = lr;
}

// --- SGD
// ------------------------------------------------------------------------------------------

SGD::SGD(std::vector<Tensor> params, SGDOptions opts)
    : Optimizer(std::move(params), opts.lr), opts_(opts) {
  EMBER_CHECK_VALUE(opts.momentum >= 0 && opts.weight_decay >= 0,
                    "SGD: momentum and weight_decay must be >= 0, got ", opts.momentum, " and ",
                    opts.weight_decay);
  EMBER_CHECK_VALUE(!opts.nesterov || (opts.momentum > 0 && opts.dampening == 0),
                    "SGD: nesterov momentum requires momentum > 0 and zero dampening");
}

namespace {
Tensor checked_grad(const Tensor& p, size_t i, const char* opt) {
  Tensor g = grad(p);
  if (!g.defined()) return g;
  EMBER_CHECK_SHAPE(g.shape() == p.shape(), opt, ": gradient of parameter ", i, " has shape ",
                    g.shape(), ", expected ", p.shape());
  EMBER_CHECK_DEVICE(g.device() == p.device(), opt, ": gradient of parameter ", i, " is on ",
                     g.device(), " but the parameter is on ", p.device());
  return g.to(p.dtype()).contiguous();
}
}  // namespace

void SGD::apply(const Scaled* scaled) {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = checked_grad(p, i, "SGD");
    if (!g.defined()) continue;
    ops::SgdParams s;
    s.lr = lr_, s.momentum = opts_.momentum, s.dampening = opts_.dampening;
    s.weight_decay = opts_.weight_decay, s.nesterov = opts_.nesterov, s.first_step = steps_[i] == 0;
    Tensor buf = opts_.momentum != 0.0 ? buffer(i, "momentum_buffer") : Tensor();
    EMBER_CHECK_VALUE(p.is_contiguous(), "SGD: parameter ", i, " is not contiguous");
    const std::unique_ptr<ops::AmpTensors> amp = amp_for(i, scaled);
    ops::sgd_step_(p, g, buf, s, "SGD", amp.get());
    if (!amp) steps_[i]++;
  }
}

// --- Adam / AdamW
// ---------------------------------------------------------------------------------

Adam::Adam(std::vector<Tensor> params, AdamOptions opts, bool decoupled)
    : Optimizer(std::move(params), opts.lr), opts_(opts), decoupled_(decoupled) {
  EMBER_CHECK_VALUE(opts.beta1 >= 0 && opts.beta1 < 1 && opts.beta2 >= 0 && opts.beta2 < 1, name(),
                    ": betas must be in [0, 1), got (", opts.beta1, ", ", opts.beta2, ")");
  EMBER_CHECK_VALUE(opts.eps >= 0 && opts.weight_decay >= 0, name(),
                    ": eps and weight_decay must be >= 0");
}

void Adam::apply(const Scaled* scaled) {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = checked_grad(p, i, decoupled_ ? "AdamW" : "Adam");
    if (!g.defined()) continue;
    EMBER_CHECK_VALUE(p.is_contiguous(), name(), ": parameter ", i, " is not contiguous");
    Tensor m = buffer(i, "exp_avg");
    Tensor v = buffer(i, "exp_avg_sq");
    const std::unique_ptr<ops::AmpTensors> amp = amp_for(i, scaled);
    if (!amp) steps_[i]++;
    ops::AdamParams s;
    s.lr = lr_, s.beta1 = opts_.beta1, s.beta2 = opts_.beta2, s.eps = opts_.eps;
    s.weight_decay = opts_.weight_decay, s.decoupled = decoupled_, s.step = steps_[i];
    ops::adam_step_(p, g, m, v, s, decoupled_ ? "AdamW" : "Adam", amp.get());
  }
}

}  // namespace ember::nn

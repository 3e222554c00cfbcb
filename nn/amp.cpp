// GradScaler (nn/amp.h): PyTorch's state machine over the device ops of ops/amp.h.
#include "nn/amp.h"

#include "autograd/elementwise.h"
#include "autograd/grad_mode.h"
#include "autograd/leaf.h"
#include "ops/amp.h"
#include "ops/elementwise.h"

namespace ember::nn {

namespace {
const char* const kFix =
    "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the "
    "iteration.";
}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : o_(options) {
  if (!o_.enabled) return;
  EMBER_CHECK_VALUE(o_.growth_factor > 1.0, "The growth factor must be > 1.0.");
  EMBER_CHECK_VALUE(o_.backoff_factor < 1.0, "The backoff factor must be < 1.0.");
}

void GradScaler::check_started(const char* fn) const {
  if (!scale_.defined()) EMBER_THROW(Error, "Attempted ", fn, " but _scale is None.  ", kFix);
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!o_.enabled) return outputs;
  const Device dev = outputs.device();
  if (!scale_.defined()) {
    scale_ = full({}, o_.init_scale, {kFloat32, dev});
    tracker_ = full({}, static_cast<double>(init_tracker_), {kInt32, dev});
  }
  return mul(outputs, scale_.device() == dev ? scale_ : scale_.to(dev));
}

std::vector<std::pair<Device, Tensor>> GradScaler::check_grads(Optimizer& opt, bool unscale,
                                                               bool allow_fp16) {
  std::vector<std::pair<Device, std::vector<Tensor>>> by_device;
  for (const Tensor& p : opt.params()) {
    const Tensor g = grad(p);
    if (!g.defined()) continue;
    EMBER_CHECK_VALUE(allow_fp16 || g.dtype() != kFloat16, "Attempting to unscale FP16 gradients.");
    auto it = by_device.begin();
    while (it != by_device.end() && it->first != g.device()) ++it;
    if (it == by_device.end()) it = by_device.insert(it, {g.device(), {}});
    it->second.push_back(g);
  }
  NoGradGuard ng;
  std::vector<std::pair<Device, Tensor>> found;
  for (auto& [dev, grads] : by_device) {
    Tensor f = zeros({}, {kFloat32, dev});
    const Tensor s = !unscale ? Tensor() : scale_.device() == dev ? scale_ : scale_.to(dev);
    ops::amp_non_finite_check_and_unscale_(grads, f, s);
    found.emplace_back(dev, f);
  }
  return found;
}

void GradScaler::unscale_(Optimizer& opt) {
  if (!o_.enabled) return;
  check_started("unscale_");
  OptState& st = states_[&opt];
  if (st.stage == Stage::unscaled)
    EMBER_THROW(Error,
                "unscale_() has already been called on this optimizer since the last update().");
  if (st.stage == Stage::stepped) EMBER_THROW(Error, "unscale_() is being called after step().");
  st.found_inf = check_grads(opt, true, false);
  st.stage = Stage::unscaled;
}

Tensor GradScaler::combined_found_inf(const OptState& s) const {
  Tensor sum;
  for (const auto& [dev, f] : s.found_inf) {
    const Tensor here = dev == scale_.device() ? f : f.to(scale_.device());
    sum = sum.defined() ? ops::add(sum, here) : here;
  }
  return sum;
}

void GradScaler::step(Optimizer& opt) {
  if (!o_.enabled) {
    opt.step();
    return;
  }
  check_started("step");
  OptState& st = states_[&opt];
  if (st.stage == Stage::stepped)
    EMBER_THROW(Error, "step() has already been called since the last update().");
  // Not unscaled yet: only checked here, and the fused update divides by the scale.
  const bool unscaled = st.stage == Stage::unscaled;
  if (!unscaled) st.found_inf = check_grads(opt, false, true);
  Tensor found = combined_found_inf(st);
  if (!found.defined()) found = zeros({}, {kFloat32, scale_.device()});  // no gradients
  opt.step(unscaled ? Tensor() : scale_, found);
  st.stage = Stage::stepped;
}

void GradScaler::update() {
  if (!o_.enabled) return;
  check_started("update");
  Tensor combined;
  for (const auto& kv : states_) {
    const Tensor f = combined_found_inf(kv.second);
    if (f.defined()) combined = combined.defined() ? ops::add(combined, f) : f;
  }
  if (!combined.defined()) EMBER_THROW(Error, "No inf checks were recorded prior to update.");
  ops::amp_update_scale_(scale_, tracker_, combined, o_.growth_factor, o_.backoff_factor,
                         o_.growth_interval);
  states_.clear();
}

void GradScaler::update(double new_scale) {
  if (!o_.enabled) return;
  check_started("update");
  scale_.fill_(new_scale);
  states_.clear();
}

void GradScaler::update(const Tensor& new_scale) {
  if (!o_.enabled) return;
  check_started("update");
  EMBER_CHECK_VALUE(new_scale.defined() && new_scale.dtype() == kFloat32 &&
                        new_scale.numel() == 1 && !new_scale.requires_grad(),
                    "new_scale should be a float or a 1-element float32 tensor with "
                    "requires_grad=False.");
  scale_.copy_(new_scale.reshape({}).to(scale_.device()));
  states_.clear();
}

double GradScaler::get_scale() const {
  if (!o_.enabled) return 1.0;
  return scale_.defined() ? scale_.item() : o_.init_scale;
}

int64_t GradScaler::get_growth_tracker() const {
  if (!o_.enabled) return 0;
  return tracker_.defined() ? tracker_.item<int64_t>() : init_tracker_;
}

NamedTensors GradScaler::state_dict() const {
  if (!o_.enabled) return {};
  return {{"scale", full({}, get_scale(), kFloat64)},
          {"growth_factor", full({}, o_.growth_factor, kFloat64)},
          {"backoff_factor", full({}, o_.backoff_factor, kFloat64)},
          {"growth_interval", full({}, static_cast<double>(o_.growth_interval), kInt64)},
          {"_growth_tracker", full({}, static_cast<double>(get_growth_tracker()), kInt64)}};
}

void GradScaler::load_state_dict(const NamedTensors& state) {
  if (!o_.enabled) return;
  if (state.empty())
    EMBER_THROW(Error,
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler.");
  auto value = [&](const char* key) {
    for (const auto& [k, t] : state)
      if (k == key) return t.item();
    EMBER_THROW(ValueError, "GradScaler load_state_dict: missing key '", key, "'");
  };
  o_.init_scale = value("scale");
  o_.growth_factor = value("growth_factor");
  o_.backoff_factor = value("backoff_factor");
  o_.growth_interval = static_cast<int64_t>(value("growth_interval"));
  init_tracker_ = static_cast<int64_t>(value("_growth_tracker"));
  if (scale_.defined()) scale_.fill_(o_.init_scale);
  if (tracker_.defined()) tracker_.fill_(static_cast<double>(init_tracker_));
}

}  // namespace ember::nn

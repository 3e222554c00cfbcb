// Dynamic loss scaling for mixed-precision training: GradScaler, with PyTorch's semantics,
// defaults and messages (torch.amp.GradScaler), and the scale, its growth tracker and the
// found-inf flags kept on the device, so that a training step never waits for it
// (Note [Host waits] in runtime/gpu.h; docs/amp.md):
//
//   nn::GradScaler scaler;
//   backward(scaler.scale(loss));   // loss * scale
//   scaler.step(opt);               // unscales inside the fused update; skipped on inf/NaN
//   scaler.update();                // backs the scale off after an inf, grows it after
//                                   // growth_interval clean steps
//
// Unlike PyTorch's, it works on every device (the cpu and emu too), so it is enabled unless
// options.enabled says otherwise. PyTorch's AssertionErrors (a scaler used before scale(), no
// inf checks recorded) are ember::Error here, as its RuntimeErrors are.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "nn/module.h"
#include "nn/optim.h"

namespace ember::nn {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;   // > 1 (ValueError otherwise, when enabled)
  double backoff_factor = 0.5;  // < 1
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // outputs * scale, recorded for autograd; the scale (float32) and its growth tracker (int32)
  // are made on outputs' device by the first call. Disabled: outputs.
  Tensor scale(const Tensor& outputs);
  // Divides opt's gradients by the scale in place and records whether any is inf or NaN, on the
  // device. At most once per optimizer between update()s, and before step() (Error otherwise,
  // with PyTorch's messages); float16 gradients are a ValueError ("Attempting to unscale FP16
  // gradients.").
  void unscale_(Optimizer& opt);
  // opt's update, skipped when a gradient is inf or NaN: the fused update reads the flag and the
  // scale on the device (Optimizer::step(grad_scale, found_inf)). Once per update().
  void step(Optimizer& opt);
  // The scale for the next iteration from every optimizer's flags (PyTorch's
  // _amp_update_scale_), or the given one; the per-optimizer records are cleared.
  void update();
  void update(double new_scale);
  // requires: a float32 tensor of one element that does not require grad (ValueError otherwise).
  void update(const Tensor& new_scale);

  // These wait for the device. 1 / 0 when disabled; the initial values before the first scale().
  double get_scale() const;
  int64_t get_growth_tracker() const;
  double get_growth_factor() const { return o_.growth_factor; }
  void set_growth_factor(double f) { o_.growth_factor = f; }
  double get_backoff_factor() const { return o_.backoff_factor; }
  void set_backoff_factor(double f) { o_.backoff_factor = f; }
  int64_t get_growth_interval() const { return o_.growth_interval; }
  void set_growth_interval(int64_t n) { o_.growth_interval = n; }
  bool is_enabled() const { return o_.enabled; }

  // PyTorch's keys: "scale", "growth_factor", "backoff_factor", "growth_interval",
  // "_growth_tracker", each a 0-dim cpu tensor (float64; int64 for the last two). Empty when
  // disabled. Call it after update().
  NamedTensors state_dict() const;
  // requires: a state_dict() of an enabled scaler (Error for an empty one, ValueError naming a
  // missing key). A no-op when disabled.
  void load_state_dict(const NamedTensors& state);

  // The device scalars (undefined before the first scale()), for inspection.
  const Tensor& scale_tensor() const { return scale_; }
  const Tensor& growth_tracker_tensor() const { return tracker_; }

 private:
  enum class Stage { ready, unscaled, stepped };
  struct OptState {
    Stage stage = Stage::ready;
    std::vector<std::pair<Device, Tensor>> found_inf;  // float32, per gradient device
  };
  void check_started(const char* fn) const;
  // Checks (and, with `unscale`, unscales) opt's gradients; the flags per device.
  std::vector<std::pair<Device, Tensor>> check_grads(Optimizer& opt, bool unscale, bool allow_fp16);
  // The sum of `s`'s flags, on the scale's device.
  Tensor combined_found_inf(const OptState& s) const;

  GradScalerOptions o_;
  int64_t init_tracker_ = 0;
  Tensor scale_, tracker_;
  std::map<const Optimizer*, OptState> states_;
};

}  // namespace ember::nn

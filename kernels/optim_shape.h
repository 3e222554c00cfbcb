// The plain parameters of the fused optimiser updates: PyTorch's SGD and Adam/AdamW rules,
// shared by the CPU and GPU kernels and by ops/optim.
#pragma once

#include <cstdint>

namespace ember::kernels {

// The kernels: sgd_step(t, p, g, buf, n, s), adam_step(t, p, g, m, v, n, s).
// requires: t float32, float64, float16 or bfloat16 (half storage computes in float32); p, g (and
// buf, m, v) n contiguous elements; buf may be null
//           when momentum == 0.
// ensures:  p and the state buffers updated in place by PyTorch's rules, one pass each, equal
//           on every device up to the device's rounding of sqrt and FMA contraction.
// A step under the loss scaler (nn/amp.h), its operands device scalars on the parameter's device,
// each null when not used: the whole step is skipped when *found_inf != 0 (read on the device);
// the gradient is divided by *grad_scale first; *step, the parameter's completed steps (float64),
// stands for SgdParams::first_step (*step == 0) and AdamParams::step (*step + 1). The kernels
// leave *step alone: amp_count_step advances it after (kernels/amp_shape.h).
struct AmpStep {
  const float* grad_scale = nullptr;
  const float* found_inf = nullptr;
  const double* step = nullptr;
};

struct SgdParams {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // the momentum buffer is initialised to the gradient
  AmpStep amp;
};

struct AdamParams {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  // AdamW: decay the weights directly instead of adding to the gradient
  int64_t step = 1;        // 1-based step count, for bias correction
  AmpStep amp;
};

}  // namespace ember::kernels

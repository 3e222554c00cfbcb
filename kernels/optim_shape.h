// The plain parameters of the fused optimiser updates: PyTorch's SGD, Adam/AdamW, RMSprop and
// Adagrad rules, and the gradient-norm clip's scaling, shared by the CPU and GPU kernels and by
// ops/optim.
#pragma once

#include <cstdint>

namespace ember::kernels {

// The kernels: sgd_step(t, p, g, buf, n, s), adam_step(t, p, g, m, v, n, s),
// rmsprop_step(t, p, g, square_avg, grad_avg, momentum_buffer, n, s), adagrad_step(t, p, g, sum,
// n, s).
// requires: t float32, float64, float16 or bfloat16 (half storage computes in float32); p, g (and
//           the state buffers) n contiguous elements; buf may be null when momentum == 0;
//           grad_avg null unless centered, momentum_buffer null unless momentum != 0 (RMSprop).
// ensures:  p and the state buffers updated in place by PyTorch's rules, one pass each, equal
//           on every device up to the device's rounding of sqrt and FMA contraction.
// A step under the loss scaler (nn/amp.h), its operands device scalars on the parameter's device,
// each null when not used: the whole step is skipped when *found_inf != 0 (read on the device);
// the gradient is divided by *grad_scale first; *step, the parameter's completed steps (float64),
// stands for SgdParams::first_step (*step == 0), AdamParams::step and AdagradParams::step
// (*step + 1); RMSprop's rule does not use it. The kernels leave *step alone: amp_count_step
// advances it after (kernels/amp_shape.h). `maximize` (every rule) negates the gradient first.
struct AmpStep {
  const float* grad_scale = nullptr;
  const float* found_inf = nullptr;
  const double* step = nullptr;
};

struct SgdParams {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
  bool first_step = false;  // the momentum buffer is initialised to the gradient
  AmpStep amp;
};

struct AdamParams {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;  // AdamW: decay the weights directly instead of adding to the gradient
  bool maximize = false;
  int64_t step = 1;  // 1-based step count, for bias correction
  AmpStep amp;
};

// RMSprop (torch/optim/rmsprop.py): g += wd * p; sq = alpha * sq + (1 - alpha) * g^2;
// centered: ga = alpha * ga + (1 - alpha) * g, avg = sqrt(sq - ga^2) + eps, else sqrt(sq) + eps;
// momentum: buf = momentum * buf + g / avg, p -= lr * buf; else p -= lr * g / avg.
struct RmspropParams {
  double lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool centered = false, maximize = false;
  AmpStep amp;
};

// Adagrad (torch/optim/adagrad.py): g += wd * p; sum += g^2;
// p -= lr / (1 + (step - 1) * lr_decay) * g / (sqrt(sum) + eps).
struct AdagradParams {
  double lr = 0.01, lr_decay = 0, weight_decay = 0, eps = 1e-10;
  bool maximize = false;
  int64_t step = 1;  // 1-based
  AmpStep amp;
};

// clip_grad_scale(t, g, n, norm_t, total_norm, max_norm): the scaling of clip_grad_norm_
// (torch/nn/utils/clip_grad.py), fused into one pass over one gradient:
//   coef = min(max_norm / (*total_norm + 1e-6), 1), in total_norm's dtype (norm_t, floating:
//   float64 in double, the others in float32, a half norm rounded after each operation as a
//   half tensor's arithmetic is); g[i] *= coef in g's dtype t (half computed in float32).
// requires: g n contiguous elements of t; total_norm one element on the same device. It is read
//           on the device, so the clip never waits for it.

}  // namespace ember::kernels

// Fused optimiser updates as ops: one pass over a parameter and its state, PyTorch's SGD,
// Adam/AdamW, RMSprop and Adagrad rules (kernels/optim_shape.h), on the parameter's device; and
// the gradient clip's scaling by a norm that stays on the device. nn/optim.h and nn/clip_grad.h
// build on them.
#pragma once

#include "kernels/optim_shape.h"
#include "runtime/tensor.h"

namespace ember::ops {

using kernels::AdagradParams;
using kernels::AdamParams;
using kernels::RmspropParams;
using kernels::SgdParams;

// A step under the loss scaler (nn/amp.h; kernels/optim_shape.h's AmpStep), each tensor
// undefined when not used: grad_scale and found_inf float32 of one element, step float64 of one
// element (the parameter's completed steps, advanced after the update unless found_inf), all on
// the parameter's device. They set SgdParams::amp / AdamParams::amp; nothing waits for the device.
struct AmpTensors {
  Tensor grad_scale, found_inf, step;
};

// requires: p a contiguous floating tensor (float16/bfloat16 computed in float32, rounded once
//           per stored value); grad of p's shape, dtype and device,
//           contiguous; momentum_buffer likewise, or undefined when s.momentum == 0 (ShapeError /
//           DTypeError / DeviceError / ValueError naming `op` otherwise).
// ensures:  p and momentum_buffer updated in place (their versions bumped).
void sgd_step_(const Tensor& p, const Tensor& grad, const Tensor& momentum_buffer,
               const SgdParams& s, const char* op = "SGD", const AmpTensors* amp = nullptr);

// requires: as sgd_step_, with exp_avg and exp_avg_sq both defined. s.step is 1-based.
// ensures:  p, exp_avg and exp_avg_sq updated in place (their versions bumped).
void adam_step_(const Tensor& p, const Tensor& grad, const Tensor& exp_avg,
                const Tensor& exp_avg_sq, const AdamParams& s, const char* op = "Adam",
                const AmpTensors* amp = nullptr);

// requires: as sgd_step_, with square_avg defined; grad_avg defined when s.centered,
// momentum_buffer
//           when s.momentum > 0 (each undefined otherwise is fine).
// ensures:  p and the buffers it uses updated in place (their versions bumped).
void rmsprop_step_(const Tensor& p, const Tensor& grad, const Tensor& square_avg,
                   const Tensor& grad_avg, const Tensor& momentum_buffer, const RmspropParams& s,
                   const char* op = "RMSprop", const AmpTensors* amp = nullptr);

// requires: as sgd_step_, with sum (the accumulated squares) defined. s.step is 1-based.
// ensures:  p and sum updated in place (their versions bumped).
void adagrad_step_(const Tensor& p, const Tensor& grad, const Tensor& sum, const AdagradParams& s,
                   const char* op = "Adagrad", const AmpTensors* amp = nullptr);

// grad *= min(max_norm / (total_norm + 1e-6), 1), the coefficient computed on the device from
// total_norm (kernels/optim_shape.h, clip_grad_scale): one kernel, no host wait.
// requires: grad a contiguous floating tensor; total_norm a floating tensor of one element on
//           grad's device (ValueError / DTypeError / DeviceError naming clip_grad_norm_).
// ensures:  grad scaled in place (its version bumped).
void clip_grad_scale_(const Tensor& grad, const Tensor& total_norm, double max_norm);

}  // namespace ember::ops

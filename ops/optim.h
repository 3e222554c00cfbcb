// Fused optimiser updates as ops: one pass over a parameter and its state, PyTorch's SGD and
// Adam/AdamW rules (kernels/optim_shape.h), on the parameter's device. nn/optim.h builds the
// optimisers on them.
#pragma once

#include "kernels/optim_shape.h"
#include "runtime/tensor.h"

namespace ember::ops {

using kernels::AdamParams;
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

}  // namespace ember::ops

// The loss scaler's device ops (kernels/amp_shape.h), PyTorch's _amp_* ops, which nn/amp.h's
// GradScaler is built on: none of them waits for the device.
//
// requires: found_inf, scale: float32 tensors of one element; growth_tracker: int32 of one
//           element; step: float64 of one element; all on the grads' (or the scale's) device;
//           grads float32 or float64 (DTypeError / ShapeError / DeviceError naming the op and the
//           operand otherwise).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace ember::ops {

// found_inf = 1 if any gradient holds inf or NaN (left as it was otherwise: the caller zeroes
// it); then, when `scale` is defined, every gradient *= float(1 / double(scale)) in place.
void amp_non_finite_check_and_unscale_(const std::vector<Tensor>& grads, const Tensor& found_inf,
                                       const Tensor& scale);

// PyTorch's _amp_update_scale_: backs the scale off after an inf, grows it after `interval`
// clean steps in a row (kernels/amp_shape.h), in place.
void amp_update_scale_(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                       double growth_factor, double backoff_factor, int64_t growth_interval);

// step += 1 unless found_inf (undefined: always), in place: an optimiser's device step count.
void amp_count_step_(const Tensor& step, const Tensor& found_inf);

}  // namespace ember::ops

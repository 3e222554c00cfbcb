// Gradient clipping and parameters as one vector, as PyTorch's torch.nn.utils: clip_grad_norm_,
// clip_grad_value_, parameters_to_vector, vector_to_parameters.
//
// Note [Clipping on the device]: clip_grad_norm_ never waits for a GPU. Each gradient's share of
// the norm (sum of |g|^p, or max |g|) is a device reduction; the shares are stacked and reduced
// on the device into the total norm, which stays there (a 0-d tensor on the first gradient's
// device, returned). The scaling is one fused kernel per gradient (ops::clip_grad_scale_): every
// thread computes min(max_norm / (norm + 1e-6), 1) from the device norm and scales its elements,
// so there is no launch for the coefficient and no host read. Only error_if_nonfinite reads the
// norm back, as PyTorch's does.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember::nn {

// Scales the gradients of `params` (those that have one) in place so that their joint p-norm is
// at most max_norm, by min(max_norm / (total_norm + 1e-6), 1). norm_type: any p > 0, infinity (the
// largest magnitude) or 0 (PyTorch's: the number of gradients with a non-zero element).
// requires: floating, contiguous gradients; norm_type >= 0 (ValueError otherwise).
// ensures:  returns the total norm before clipping (0-d, on the first gradient's device, dtype of
//           the gradients; 0 float32 on the cpu when there are none). With error_if_nonfinite a
//           NaN or infinite norm throws Error before any gradient changes.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient into [-clip_value, clip_value] in place.
// requires: clip_value >= 0 (ValueError otherwise).
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

// The parameters flattened and concatenated, in order (differentiable, as torch.cat of views).
// requires: all on one device (DeviceError otherwise).
Tensor parameters_to_vector(const std::vector<Tensor>& params);

// Copies consecutive slices of vec into the parameters (their data; no graph is recorded).
// requires: vec 1-D with exactly as many elements as the parameters together (ShapeError), on
//           their device (DeviceError).
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& params);

}  // namespace ember::nn

// Differentiable layer, group and instance normalisation (PyTorch's torch.nn.functional forms;
// the requirements and the statistics are ops/layer_norm.h's). Gradients flow to x, weight and
// bias, through the row statistics. Under autocast layer_norm and group_norm run in float32
// (PyTorch's policy); instance_norm runs in its input's dtype.
#pragma once

#include "runtime/tensor.h"

namespace ember {

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

// use_input_stats: normalise each (sample, channel) by its own statistics and, when
// running_mean/running_var are defined, update them in place with `momentum` (the mean over the
// batch of each instance's mean and unbiased variance, as PyTorch); otherwise normalise by the
// running statistics (both required: ValueError), as batch norm's eval does. requires x
// [N, C, *] with more than one spatial element under use_input_stats (ValueError).
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = Tensor(),
                     const Tensor& running_var = Tensor(), const Tensor& weight = Tensor(),
                     const Tensor& bias = Tensor(), bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);

}  // namespace ember

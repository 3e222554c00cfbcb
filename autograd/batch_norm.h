// Differentiable batch normalisation (see ops/batch_norm.h for the requirements).
#pragma once

#include "runtime/tensor.h"

namespace ember {

// Normalises x ([N, C, ...]) per channel: (x - mean) / sqrt(var + eps) * weight + bias, where
// weight and bias are optional (undefined tensors). Training uses the batch statistics and, when
// running_mean/running_var are defined, updates them in place with `momentum` (running_var from
// the unbiased batch variance); eval uses the running statistics. Differentiable w.r.t. x, weight
// and bias; in training the gradient flows through the batch statistics.
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5);

}  // namespace ember

// Batch normalisation over the channel dim (dim 1) of [N, C, ...] input, any spatial rank.
//
// requires: x of 2 or more dims, of a floating dtype, on any device; weight, bias, running_mean
//           and running_var each undefined or 1-D of size C on x's device, of x's dtype or, for a
//           float16/bfloat16 x, float32 (autocast's mixed precision) (ShapeError, DTypeError,
//           DeviceError naming the op otherwise). A half x runs through float32 (Note [Widened
//           half ops] in ops/dispatch.h): out has x's dtype, save_mean and save_invstd float32.
//           Eval needs both running stats (ValueError); training needs more than one value per
//           channel (ValueError).
// Tensors on cuda/emu run kernels/cuda/batch_norm.cu; on cuda, cuDNN's batch norm where the op's
// preference allows (ops/cudnn_ops.h; the eval backward always runs Ember's). These ops are
// autograd-free;
// autograd/batch_norm.h is the differentiable function.
#pragma once

#include "runtime/tensor.h"

namespace ember::ops {

struct BatchNormOutput {
  Tensor out;          // x's shape and dtype, contiguous
  Tensor save_mean;    // [C]: the mean used (batch mean in training, running mean in eval)
  Tensor save_invstd;  // [C]: 1 / sqrt(var + eps) for the variance used
  Tensor reserve;      // cuDNN's reserve space for the backward; undefined when none
};

// Training: normalises with the batch mean and biased variance and, if the running stats are
// defined, updates them in place: running = (1 - momentum) * running + momentum * batch, with the
// unbiased batch variance for running_var (as PyTorch). Eval: normalises with the running stats.
BatchNormOutput batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool training,
                           double momentum, double eps);

struct BatchNormGrads {
  Tensor grad_input, grad_weight, grad_bias;  // undefined where not asked for
};

// Gradients of batch_norm from grad_out (x's shape) and the statistics batch_norm saved.
// `training`, `reserve` and `eps` must be the forward pass's (cuDNN's backward reads them).
BatchNormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                   const Tensor& save_mean, const Tensor& save_invstd,
                                   bool training, bool want_input, bool want_weight, bool want_bias,
                                   const Tensor& reserve = Tensor(), double eps = 1e-5);

}  // namespace ember::ops

// Activations and softmax on cuDNN (docs/gpu_backend.md, "Activations and softmax on cuDNN"):
// the legacy calls, as the graph API has no standalone softmax and its pointwise activations gain
// nothing over these for one op. Each returns false, doing nothing, where cuDNN has no such
// activation or the sizes do not fit its 32-bit descriptors; the op then runs Ember's kernel.
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/softmax_shape.h"
#include "runtime/dtype.h"

namespace ember::ops::cudnn {

// relu, sigmoid, tanh, elu (alpha), silu (cuDNN's swish, beta 1) and hardtanh(x, 0, c) (cuDNN's
// clipped relu; relu6), NaN propagated as PyTorch does; y and x: n contiguous elements.
bool activation_forward(cudnnHandle_t h, kernels::Activation a, kernels::ActivationParams p,
                        DType t, int64_t n, const void* x, void* y);
// s is what Ember's backward keeps: the output for sigmoid and tanh, the input for the others
// (cuDNN wants both x and y: relu's is either, elu's, silu's and clipped relu's y is recomputed
// from x).
// `device`: the cuda device, for the recomputed y.
bool activation_backward(cudnnHandle_t h, int device, kernels::Activation a,
                         kernels::ActivationParams p, DType t, int64_t n, const void* s,
                         const void* dy, void* dx);

// The gradient of softmax / log_softmax over `s.dim` of an (outer, dim, inner) tensor (cuDNN's
// channel mode on an outer x dim x inner x 1 tensor). The forward pass is Ember's
// (ops::run_softmax_forward).
bool softmax_backward(cudnnHandle_t h, bool log, DType t, const kernels::SoftmaxShape& s,
                      const void* y, const void* dy, void* dx);

}  // namespace ember::ops::cudnn

// Ops that run on cuDNN where it serves (ops/cudnn/pointwise.h): each returns true when cuDNN ran
// it, false (doing nothing) when the op should run Ember's kernel instead: not a cuda device,
// cuDNN off or unusable, the op's preference prefer-ember (ops/conv2d_cudnn.h), or a case cuDNN
// lacks (leaky_relu, gelu, softplus; sizes beyond its 32-bit descriptors). The operands are
// contiguous on `device`. EMBER_LOG=select says once per op which one runs and why.
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/softmax_shape.h"
#include "ops/conv2d_algo.h"
#include "runtime/device.h"
#include "runtime/dtype.h"

namespace ember::ops {

bool cudnn_activation_forward(Device device, kernels::Activation a, kernels::ActivationParams p,
                              DType t, int64_t n, const void* x, void* y);
bool cudnn_activation_backward(Device device, kernels::Activation a, kernels::ActivationParams p,
                               DType t, int64_t n, const void* s, const void* dy, void* dx);
bool cudnn_softmax_forward(Device device, bool log, DType t, const kernels::SoftmaxShape& s,
                           const void* x, void* y);
bool cudnn_softmax_backward(Device device, bool log, DType t, const kernels::SoftmaxShape& s,
                            const void* y, const void* dy, void* dx);

// y = relu(conv(x, w) + bias) as one cuDNN graph (Note [Fused convolution graphs] in
// ops/cudnn/graph.cpp), for a forward key on cuda under the convolution's preference. false when
// cuDNN should not or cannot (no config of the fused graph makes a plan): the caller then runs
// the convolution and the relu apart.
bool cudnn_conv2d_bias_relu(const ConvKey& key, const void* x, const void* w, const void* bias,
                            void* y);

}  // namespace ember::ops

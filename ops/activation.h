// Pointwise activations and their backward ops, with PyTorch's definitions.
//
// requires: floating tensors (float32, float64, float16, bfloat16) on any device (DTypeError
//           naming the op otherwise); backward ops: grad_out of the same shape, dtype and device
//           as the saved tensor (ShapeError / DTypeError / DeviceError naming both devices).
//           Inputs may be non-contiguous.
// ensures:  a new contiguous tensor of the input's shape, dtype and device.
// These ops are autograd-free; autograd/activation.h holds the differentiable functions.
#pragma once

#include "runtime/tensor.h"

namespace ember {
// gelu's form: exact (x * Phi(x), through erf) or the tanh approximation.
enum class GeluApproximate { None, Tanh };
}  // namespace ember

namespace ember::ops {

Tensor relu(const Tensor& x);                               // max(x, 0)
// relu written into x, for a caller that owns it; returns x. ValueError unless x is contiguous.
Tensor relu_(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope);  // x > 0 ? x : slope * x
Tensor sigmoid(const Tensor& x);                            // 1 / (1 + exp(-x))
Tensor tanh(const Tensor& x);
Tensor gelu(const Tensor& x, GeluApproximate approximate);
Tensor silu(const Tensor& x);               // x * sigmoid(x)
Tensor elu(const Tensor& x, double alpha);  // x > 0 ? x : alpha (e^x - 1)
// x * beta > threshold ? x : log(1 + exp(beta x)) / beta.
Tensor softplus(const Tensor& x, double beta, double threshold);
// clamp(x, min_val, max_val), NaN kept (relu6 is hardtanh(x, 0, 6)). ValueError when
// min_val > max_val.
Tensor hardtanh(const Tensor& x, double min_val, double max_val);
Tensor hardswish(const Tensor& x);    // x * relu6(x + 3) / 6
Tensor hardsigmoid(const Tensor& x);  // relu6(x + 3) / 6
Tensor mish(const Tensor& x);         // x * tanh(softplus(x))

// Input gradients. relu, leaky_relu, gelu, silu, elu, softplus, hardtanh, hardswish, hardsigmoid
// and mish take the forward input x;
// sigmoid and tanh take the forward output y. relu/leaky_relu pass the slope for x <= 0.
Tensor relu_backward(const Tensor& grad_out, const Tensor& x);
Tensor leaky_relu_backward(const Tensor& grad_out, const Tensor& x, double negative_slope);
Tensor sigmoid_backward(const Tensor& grad_out, const Tensor& y);
Tensor tanh_backward(const Tensor& grad_out, const Tensor& y);
Tensor gelu_backward(const Tensor& grad_out, const Tensor& x, GeluApproximate approximate);
Tensor silu_backward(const Tensor& grad_out, const Tensor& x);
Tensor elu_backward(const Tensor& grad_out, const Tensor& x, double alpha);
Tensor softplus_backward(const Tensor& grad_out, const Tensor& x, double beta, double threshold);
// grad_out where min_val < x < max_val, else 0.
Tensor hardtanh_backward(const Tensor& grad_out, const Tensor& x, double min_val, double max_val);
// PyTorch's one-sided derivatives at the kinks: hardswish's is taken from the middle piece on
// [-3, 3], hardsigmoid's is 0 at -3 and 3.
Tensor hardswish_backward(const Tensor& grad_out, const Tensor& x);
Tensor hardsigmoid_backward(const Tensor& grad_out, const Tensor& x);
Tensor mish_backward(const Tensor& grad_out, const Tensor& x);

}  // namespace ember::ops

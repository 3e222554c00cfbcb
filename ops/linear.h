// The linear (fully connected) layer: y = x @ w^T + b.
//
// requires: x [..., in] (1 or more dims), w [out, in], b undefined or [out]; all float32 or all
//           float64, on one device (ShapeError / DTypeError / DeviceError naming the op
//           otherwise).
// ensures:  y [..., out], contiguous. x, w may be non-contiguous views; w^T is never copied.
// These ops are autograd-free; autograd/linear.h holds the differentiable function.
#pragma once

#include "runtime/tensor.h"

namespace ember::ops {

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);

struct LinearGrads {
  Tensor grad_input, grad_weight, grad_bias;  // undefined where not asked for
};

// From grad_out [..., out]: grad_input = g @ w, grad_weight = g^T @ x (over all leading dims),
// grad_bias = g summed over all leading dims.
LinearGrads linear_backward(const Tensor& grad_out, const Tensor& x, const Tensor& w,
                            bool want_input, bool want_weight, bool want_bias);

}  // namespace ember::ops

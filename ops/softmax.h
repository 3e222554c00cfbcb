// softmax and log_softmax along one dim, and their backward ops.
//
// requires: float32 or float64 on any device; dim in [-ndim, ndim) (a 0-D tensor counts as 1-D;
//           IndexError otherwise). Backward: grad_out of the output's shape, dtype and device
//           (DeviceError naming both devices otherwise).
// ensures:  a new contiguous tensor of x's shape on x's device; softmax sums to 1 along dim;
// log_softmax is
//           x - logsumexp(x) with the max subtracted first, so large inputs do not overflow.
// These ops are autograd-free; autograd/softmax.h holds the differentiable functions.
#pragma once

#include "runtime/tensor.h"

namespace ember::ops {

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
// From the forward output y: y * (g - sum(g * y)) and g - exp(y) * sum(g), along dim.
Tensor softmax_backward(const Tensor& grad_out, const Tensor& y, int64_t dim);
Tensor log_softmax_backward(const Tensor& grad_out, const Tensor& y, int64_t dim);

}  // namespace ember::ops

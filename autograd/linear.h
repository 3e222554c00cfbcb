// Differentiable linear layer (requirements in ops/linear.h).
#pragma once

#include "runtime/tensor.h"

namespace ember {

// y = x @ w^T + b for x [..., in], w [out, in], b [out] or undefined. The backward computes only
// the gradients some input needs, each with one GEMM (or one sum for the bias).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = Tensor());

}  // namespace ember

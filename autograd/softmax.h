// Differentiable softmax and log_softmax along one dim (requirements in ops/softmax.h).
#pragma once

#include "runtime/tensor.h"

namespace ember {

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

}  // namespace ember

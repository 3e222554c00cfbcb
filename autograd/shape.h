// Differentiable shape changes: the Tensor views of runtime/tensor.h, recorded so that the
// gradient flows back through them.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember {

Tensor reshape(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1);
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);

}  // namespace ember

// Differentiable matrix product.
#pragma once

#include "runtime/tensor.h"

namespace ember {

// As torch.matmul: 2-D x 2-D is a matrix product, batch dims broadcast, a 1-D left operand is a
// row and a 1-D right operand a column (the added dim is removed from the result).
// requires: both operands at least 1-D, inner sizes equal (ShapeError otherwise).
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace ember

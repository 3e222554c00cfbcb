// Matrix products.
//
// matmul follows torch.matmul: 1-D x 1-D is a dot product; 2-D x 2-D a matrix product; 1-D
// operands are promoted to a row/column and the added dim removed afterwards; for >2-D the
// leading (batch) dims broadcast. requires: float32 or float64, same dtype and device, inner
// sizes equal (ShapeError naming both shapes otherwise).
#pragma once

#include "runtime/tensor.h"

namespace ember::ops {

Tensor matmul(const Tensor& a, const Tensor& b);
// 2-D only: [M, K] x [K, N] -> [M, N].
Tensor mm(const Tensor& a, const Tensor& b);
// 3-D only: [B, M, K] x [B, K, N] -> [B, M, N].
Tensor bmm(const Tensor& a, const Tensor& b);

}  // namespace ember::ops

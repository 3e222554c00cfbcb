// The plain parameters of the batched matrix product C[b] = A[b] x B[b], shared by the CPU
// kernel (Eigen), the GPU kernels, cuBLAS and ops/matmul.
#pragma once

#include <cstdint>

#include "kernels/elementwise_shape.h"

namespace ember::kernels {

// A[b]: m x k, B[b]: k x n, with row/column strides in elements; C contiguous [batch, m, n].
// The batch index runs row-major over batch_index.sizes, and batch_index.strides[0] / [1] give
// A's / B's offset along each batch dim (0 repeats the operand: broadcasting).
// The kernel: gemm_batched(t, shape, a, b, c, stream).
// requires: t float32 or float64; C not aliasing A or B; any m, n, k >= 0.
// ensures:  C written in full (zeros when k == 0), accumulating in t.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t a_row = 0, a_col = 0, b_row = 0, b_col = 0;
  int64_t batch = 1;
  StridedIndex<2> batch_index;
};

}  // namespace ember::kernels

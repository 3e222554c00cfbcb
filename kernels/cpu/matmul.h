// CPU kernel for (batched) matrix products on strided operands, through Eigen's GEMM.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/dtype.h"

namespace ember::kernels::cpu {

// C[b] = A[b] x B[b] for every batch index b, A[b]: m x k, B[b]: k x n, C contiguous
// [batch..., m, n]. Strides are in elements; a batch stride of 0 repeats that operand.
struct MatmulShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t a_row = 0, a_col = 0, b_row = 0, b_col = 0;  // strides within one matrix
  std::vector<int64_t> batch_sizes, a_batch_strides, b_batch_strides;
};

// requires: t is f32 or f64 (DTypeError otherwise); c does not alias a or b.
// ensures:  C is written in full (zeros when k == 0). A matrix with unit stride along a row or
//           a column goes straight to Eigen's GEMM without a copy; any other layout is packed
//           first.
void matmul_cpu(DType t, const MatmulShape& shape, const void* a, const void* b, void* c);

}  // namespace ember::kernels::cpu

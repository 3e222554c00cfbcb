// CPU kernel for the bias step of a linear layer (the product itself is kernels/cpu/matmul).
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace ember::kernels::cpu {

// y[r, c] += bias[c] for a contiguous [rows, cols] y. requires: t is f32 or f64.
void add_bias_rows_cpu(DType t, int64_t rows, int64_t cols, const void* bias, void* y);

}  // namespace ember::kernels::cpu

// CPU kernels for softmax and log_softmax along one dim of contiguous data, viewed as
// [outer, dim, inner] (inner = 1 when the dim is the last one).
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace ember::kernels::cpu {

struct SoftmaxShape {
  int64_t outer = 1, dim = 1, inner = 1;
};

// y = softmax(x) or log_softmax(x) along dim, computed as exp(x - max) / sum (numerically
// stable; sums accumulate in double). requires: t is f32 or f64.
void softmax_fwd_cpu(DType t, const SoftmaxShape& shape, bool log, const void* x, void* y);

// From the forward output y: softmax: dx = y * (dy - sum(dy * y)); log_softmax:
// dx = dy - exp(y) * sum(dy).
void softmax_bwd_cpu(DType t, const SoftmaxShape& shape, bool log, const void* y, const void* dy,
                     void* dx);

}  // namespace ember::kernels::cpu

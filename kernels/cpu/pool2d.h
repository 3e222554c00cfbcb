// 2-D pooling on the CPU: max (with argmax indices), average and adaptive average, forward
// and backward, over contiguous NCHW buffers of dtype t (f32 or f64; DTypeError otherwise).
//
// Windows follow PyTorch exactly: output (i, j) covers rows i*sh - ph + a*dh (a < kh), columns
// alike, clipped to the input. Outputs are overwritten; backward kernels write all of dx.
#pragma once

#include <cstdint>

#include "kernels/pool_shape.h"
#include "runtime/dtype.h"

namespace ember::kernels::cpu {

// y = max over each window; idx = its position h*W + w within the plane (the first maximum;
// a NaN wins and propagates, the last NaN giving the index, as in PyTorch).
void max_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y, int64_t* idx);
// dx[plane][idx] += dy for every output element.
void max_pool2d_bwd(DType t, const PoolShape& s, const void* dy, const int64_t* idx, void* dx);

// y = sum over the window / divisor, the divisor being divisor_override, else the window
// clipped to the padded input (count_include_pad) or to the input itself.
void avg_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y);
void avg_pool2d_bwd(DType t, const PoolShape& s, const void* dy, void* dx);

// Output (i, j) averages rows [floor(i*H/OH), ceil((i+1)*H/OH)) and columns alike.
void adaptive_avg_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y);
void adaptive_avg_pool2d_bwd(DType t, const PoolShape& s, const void* dy, void* dx);

}  // namespace ember::kernels::cpu

// Direct 2-D convolution on the CPU: the plain loops of the definition, in all three
// directions. Slow but obviously right; the registry's `direct` algorithm and the fallback when
// nothing faster applies.
//
// All pointers are contiguous NCHW (x, y) or KCRS (w) buffers of dtype t (f32 or f64; DTypeError
// otherwise) with the geometry in `s` (kernels/conv_shape.h). Outputs are overwritten, never
// accumulated into, and must not alias an input.
#pragma once

#include "kernels/conv_shape.h"
#include "runtime/dtype.h"

namespace ember::kernels::cpu {

// y = conv(x, w) + bias (bias may be null).
void conv2d_fwd_direct(DType t, const ConvShape& s, const void* x, const void* w, const void* bias,
                       void* y);
// dx = d(sum(y * dy)) / dx.
void conv2d_bwd_data_direct(DType t, const ConvShape& s, const void* dy, const void* w, void* dx);
// dw = d(sum(y * dy)) / dw.
void conv2d_bwd_filter_direct(DType t, const ConvShape& s, const void* dy, const void* x, void* dw);

}  // namespace ember::kernels::cpu

// The direct convolution's cpu forward with its output clamped (kernels/cpu/conv2d_direct.cpp;
// the table's conv2d_fwd_direct is the same without a clamp).
#pragma once

#include "kernels/conv_shape.h"
#include "kernels/cpu/output_clamp.h"
#include "runtime/dtype.h"

namespace ember::kernels::cpu {

// y = conv(x, w) (+ bias), clamped as each output plane (depthwise) or element is written when
// `clamp` is not null. float32 and float64 (DTypeError otherwise); buffers as
// kernels/conv_shape.h.
void conv2d_fwd_direct_clamped(DType t, const ConvShape& s, const void* x, const void* w,
                               const void* bias, void* y, const OutputClamp* clamp);

}  // namespace ember::kernels::cpu

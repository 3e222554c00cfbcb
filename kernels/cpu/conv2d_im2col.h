// 2-D convolution on the CPU as GEMMs: each image's receptive fields are unrolled into a column
// matrix (im2col) and multiplied with the filters by Eigen's GEMM, in all three directions.
//
// Buffers and geometry as in kernels/conv_shape.h (contiguous NCHW / KCRS, f32 or f64,
// outputs overwritten, no aliasing). `workspace` holds `workspace_bytes` bytes (any alignment),
// at least conv2d_im2col_workspace_bytes(t, s, pass) asked for in the same threading context
// for full parallelism; with less the kernel uses fewer workers, and throws ValueError only when
// even one worker does not fit.
//
// Parallelism: a batch of small images runs one image per thread (each with its own slice of
// the workspace, Eigen single-threaded inside); a few large images run in turn with Eigen's own
// parallel GEMM. The filter gradient sums per-worker partial results in a fixed order, so the
// result is the same on every run with the same thread count.
#pragma once

#include <cstddef>

#include "kernels/conv_shape.h"
#include "runtime/dtype.h"

namespace ember::kernels::cpu {


size_t conv2d_im2col_workspace_bytes(DType t, const ConvShape& s, ConvDirection pass);

void conv2d_fwd_im2col(DType t, const ConvShape& s, const void* x, const void* w, const void* bias,
                       void* y, void* workspace, size_t workspace_bytes);
void conv2d_bwd_data_im2col(DType t, const ConvShape& s, const void* dy, const void* w, void* dx,
                            void* workspace, size_t workspace_bytes);
void conv2d_bwd_filter_im2col(DType t, const ConvShape& s, const void* dy, const void* x, void* dw,
                              void* workspace, size_t workspace_bytes);

}  // namespace ember::kernels::cpu

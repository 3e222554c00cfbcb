// 2-D convolution on the CPU as an implicit GEMM: float32 only, built when the compiler targets
// AVX-512 (EMBER_NATIVE on such a machine). The receptive fields are never written out as a
// column matrix: each 32-column panel of it is gathered straight from the NCHW image into the
// GEMM's packed operand, which stays in cache, and a register-tiled micro-kernel multiplies it.
//
//   forward          Y = W * col(X)
//   backward data    dX = W' * col'(dY): a forward convolution of dY with the filters flipped in
//                    space and transposed in channels (no col2im); with stride > 1, one per class
//                    of input rows and columns, scattered into dX
//   backward filter  dWᵀ += col(X) * dYᵀ, panel by panel
//
// Buffers and geometry as in kernels/cpu/conv2d_direct.h (contiguous NCHW / KCRS, outputs
// overwritten, no aliasing). `workspace` holds at least conv2d_implicit_gemm_workspace_bytes(s,
// pass) asked for in the same threading context for full parallelism; with less the kernel uses
// fewer threads, and throws ValueError only when even one does not fit.
//
// Parallelism: the panels split into one contiguous run per thread; the filter gradient sums
// per-thread partial results in a fixed order, so every result is the same on every run with the
// same thread count.
#pragma once

#include <cstddef>

#include "kernels/conv_shape.h"
#include "kernels/cpu/conv2d_im2col.h"
#include "runtime/dtype.h"

namespace ember::kernels::cpu {

// True when this algorithm runs `pass` of `s` in dtype `t`; otherwise false, with *why set.
bool conv2d_implicit_gemm_supports(DType t, const ConvShape& s, ConvPass pass, const char** why);

size_t conv2d_implicit_gemm_workspace_bytes(const ConvShape& s, ConvPass pass);

// Estimated work of `pass` on one thread, in vector multiply-adds (16 lanes, rounded up to the
// micro-kernels' tiles) plus one unit per value gathered without a prepared image copy: what the
// registry's cost model compares with the other algorithms. Zero when not supported.
double conv2d_implicit_gemm_work(const ConvShape& s, ConvPass pass);

// requires: conv2d_implicit_gemm_supports(f32, s, pass) for the matching pass.
void conv2d_fwd_implicit_gemm(const ConvShape& s, const float* x, const float* w, const float* bias,
                              float* y, void* workspace, size_t workspace_bytes);
void conv2d_bwd_data_implicit_gemm(const ConvShape& s, const float* dy, const float* w, float* dx,
                                   void* workspace, size_t workspace_bytes);
void conv2d_bwd_filter_implicit_gemm(const ConvShape& s, const float* dy, const float* x, float* dw,
                                     void* workspace, size_t workspace_bytes);

}  // namespace ember::kernels::cpu

// "Version 1" of four ops: the plainest correct CUDA kernel of each, float32 only, the first
// rung of bench/bench_ladder (README.md, "Benchmarks"). They are for reading and comparing, not
// dispatch kernels: no op calls them. Declared for both builds (ember::kernels::cuda by nvcc,
// ember::kernels::emu by g++).
//
// Common rules: buffers hold float32 on the backend's device, contiguous, outputs not aliasing
// inputs; each launcher enqueues on `stream` and returns without waiting; a failed launch throws
// CudaError.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/batch_norm_shape.h"
#include "kernels/conv_shape.h"
#include "runtime/gpu.h"

// gemm_v1: requires a [m, k], b [k, n], c [m, n] row-major; m, n, k >= 0.
//          ensures c = a * b, one thread per element of c.
// gemm_v2: as gemm_v1, through 16 x 16 shared-memory tiles (the second rung).
// gemm_tiled_f32 (kernels/cuda/gemm.cu): as gemm_v1, by gemm.cu's general kernel -- register
//          tiles of 4 x 4 per thread, scalar loads -- the third rung.
// conv2d_fwd_v1: requires the layouts of kernels/conv_shape.h, oh and ow filled in (any
//          stride, padding, dilation, groups). ensures y = conv(x, w), one thread per output.
// reduce_sum_v1: requires `workspace` of reduce_sum_v1_workspace_floats(n) floats.
//          ensures *out = the sum of x[0..n) (0 for n == 0), by shared-memory trees, one launch
//          per level.
// batch_norm_fwd_v1: training-mode forward over [n, c, s] data. requires weight, bias of s.c
//          floats. ensures y = (x - mean) / sqrt(var + eps) * weight + bias with the batch mean
//          and biased variance of each channel; one block per channel.
#define EMBER_LADDER_V1_DECLS                                                                      \
  void gemm_v1(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,          \
               ::ember::gpu::Stream stream);                                                       \
  void gemm_v2(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,          \
               ::ember::gpu::Stream stream);                                                       \
  void gemm_tiled_f32(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,   \
                      ::ember::gpu::Stream stream);                                                \
  void conv2d_fwd_v1(const ConvShape& s, const float* x, const float* w, float* y,                 \
                     ::ember::gpu::Stream stream);                                                 \
  size_t reduce_sum_v1_workspace_floats(int64_t n);                                                \
  void reduce_sum_v1(int64_t n, const float* x, float* out, float* workspace,                      \
                     ::ember::gpu::Stream stream);                                                 \
  void batch_norm_fwd_v1(const BatchNormShape& s, double eps, const float* x, const float* weight, \
                         const float* bias, float* y, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_LADDER_V1_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_LADDER_V1_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_LADDER_V1_DECLS

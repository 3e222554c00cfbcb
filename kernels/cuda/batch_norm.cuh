// Batch normalisation for the GPU backends, declared for both builds: training statistics,
// normalisation with running-stat updates, eval mode and the backward, over [N, C, S] contiguous
// data (S = the product of the spatial sizes). The rules are those of kernels/cpu/batch_norm.h.
#pragma once

#include <cstdint>

#include "kernels/batch_norm_shape.h"
#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

namespace ember::kernels::gpu_types {

using kernels::BatchNormParams;
using kernels::BatchNormShape;

// Each channel's N*S values are split into this many parts, one block each: enough blocks in
// all to fill a large GPU, but at least ~2048 values per block.
inline int64_t batch_norm_parts(const BatchNormShape& s) {
  constexpr int64_t kMinPerBlock = 2048, kTargetBlocks = 2048;
  const int64_t by_size = (s.n * s.s + kMinPerBlock - 1) / kMinPerBlock;
  const int64_t by_grid = s.c > 0 ? (kTargetBlocks + s.c - 1) / s.c : 1;
  const int64_t parts = by_size < by_grid ? by_size : by_grid;
  return parts < 1 ? 1 : parts;
}

// double elements of the workspace batch_norm_fwd and batch_norm_bwd need: three partial
// statistics per part of each channel and four per-channel coefficients.
inline int64_t batch_norm_workspace(const BatchNormShape& s) {
  return s.c * (3 * batch_norm_parts(s) + 4);
}

}  // namespace ember::kernels::gpu_types

// requires: t is f32 or f64 (std::invalid_argument otherwise); x, y, dy, dx hold n*c*s contiguous
//           elements of t, every other buffer c elements of t, all on the backend's device;
//           weight and bias may be null (1 and 0); training needs n*s > 1 and eval both running
//           buffers (ops/batch_norm.cpp checks); workspace holds batch_norm_workspace(shape)
//           doubles.
// ensures:  batch_norm_fwd: y, save_mean, save_invstd and (training, when not null) the running
//           stats as kernels/cpu/batch_norm_fwd_cpu computes them. The statistics accumulate in
//           double: each thread sums deviations from its first value, then threads, blocks and
//           parts merge (count, mean, M2) triples with Chan's rule in a fixed order, so results
//           are deterministic. batch_norm_bwd: dx, dweight, dbias (each may be null) as
//           batch_norm_bwd_cpu, sums in double in a fixed order. Throws CudaError if a launch
//           fails.
#define EMBER_BATCH_NORM_KERNEL_DECLS                                                              \
  void batch_norm_fwd(gpu_types::Scalar t, const gpu_types::BatchNormShape& shape,                 \
                      const gpu_types::BatchNormParams& params, const void* x, const void* weight, \
                      const void* bias, void* running_mean, void* running_var, void* y,            \
                      void* save_mean, void* save_invstd, double* workspace,                       \
                      ::ember::gpu::Stream stream);                                                \
  void batch_norm_bwd(gpu_types::Scalar t, const gpu_types::BatchNormShape& shape, bool training,  \
                      const void* x, const void* dy, const void* weight, const void* save_mean,    \
                      const void* save_invstd, void* dx, void* dweight, void* dbias,               \
                      double* workspace, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_BATCH_NORM_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_BATCH_NORM_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_BATCH_NORM_KERNEL_DECLS

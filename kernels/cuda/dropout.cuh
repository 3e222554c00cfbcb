// Dropout for the GPU backends, declared for both builds. The keep mask follows the CPU's rule
// (kernels/cpu/dropout.h): element i keeps when the uniform of lane i % 4 of Philox block
// offset + i / 4 is below 1 - p, so a seed and offset give the same mask on every device.
#pragma once

#include <cstdint>

#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

// requires: t is f32 or f64 (std::invalid_argument otherwise); x, y, mask (dy, dx) hold n
//           contiguous elements on the backend's device; 0 <= p < 1.
// ensures:  dropout_fwd: mask[i] = uniform_i < 1 - p (bit for bit the CPU's mask) and
//           y[i] = mask[i] ? x[i] * scale : 0 (scale rounded to t, as on the CPU);
//           dropout_bwd: dx[i] = mask[i] ? dy[i] * scale : 0. Throws CudaError if a launch fails.
#define EMBER_DROPOUT_KERNEL_DECLS                                                                 \
  void dropout_fwd(gpu_types::Scalar t, int64_t n, uint64_t seed, uint64_t offset, double p,       \
                   double scale, const void* x, bool* mask, void* y, ::ember::gpu::Stream stream); \
  void dropout_bwd(gpu_types::Scalar t, int64_t n, double scale, const bool* mask, const void* dy, \
                   void* dx, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_DROPOUT_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_DROPOUT_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_DROPOUT_KERNEL_DECLS

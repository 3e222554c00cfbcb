// Elementwise fill and add on float buffers: the smallest kernels of the GPU backends, declared
// for both builds (ember::kernels::cuda by nvcc, ember::kernels::emu by g++).
#pragma once

#include <cstdint>

#include "runtime/gpu.h"

// requires: y (and a, b) hold n floats on the backend's device; n >= 0.
// ensures: y[i] = value (fill) or y[i] = a[i] + b[i] (add) once the stream reaches the launch;
// throws CudaError if the launch fails.
#define EMBER_FILL_KERNEL_DECLS                                                 \
  void fill_f32(float* y, float value, int64_t n, ::ember::gpu::Stream stream); \
  void add_f32(const float* a, const float* b, float* y, int64_t n, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_FILL_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_FILL_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_FILL_KERNEL_DECLS

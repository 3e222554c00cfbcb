// Random fills through Philox4x32-10 for the GPU backends, declared for both builds. Element i
// of a fill depends only on (seed, offset, i), as on the CPU (runtime/rng.cpp), so a seed gives
// the same tensor on every device.
#pragma once

#include <cstdint>

#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

// requires: t is f32 or f64 (std::invalid_argument otherwise); out holds n contiguous elements.
// ensures:  uniform: a + (b - a) * u; bernoulli: 1 if u < a else 0 (u the 24-bit uniform of the
//           element's Philox word), computed in double and rounded to t, so bit for bit the CPU's
//           values; normal: a + b * z with z from Box-Muller in float on lane pairs (0,1), (2,3),
//           equal to the CPU's up to the device's sinf/cosf/logf rounding.
#define EMBER_RANDOM_KERNEL_DECLS                                                         \
  void random_fill(gpu_types::RandomDist dist, gpu_types::Scalar t, int64_t n, void* out, \
                   uint64_t seed, uint64_t offset, double a, double b,                    \
                   ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_RANDOM_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_RANDOM_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_RANDOM_KERNEL_DECLS

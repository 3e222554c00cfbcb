// Fused optimiser updates for the GPU backends, declared for both builds: one pass over each
// parameter, with PyTorch's SGD and Adam/AdamW rules (the same as kernels/cpu/optim.h).
#pragma once

#include <cstdint>

#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

// requires: t is f32 or f64 (std::invalid_argument otherwise); p, g (and buf, m, v) hold n
//           contiguous elements of t on the backend's device; buf may be null when
//           momentum == 0.
// ensures:  p (and the state buffers) updated in place as kernels/cpu/optim does, up to the
//           device's rounding of sqrt and FMA contraction.
#define EMBER_OPTIM_KERNEL_DECLS                                                           \
  void sgd_step(gpu_types::Scalar t, void* p, const void* g, void* buf, int64_t n,         \
                const gpu_types::SgdParams& s, ::ember::gpu::Stream stream);               \
  void adam_step(gpu_types::Scalar t, void* p, const void* g, void* m, void* v, int64_t n, \
                 const gpu_types::AdamParams& s, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_OPTIM_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_OPTIM_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_OPTIM_KERNEL_DECLS

// Pointwise activations and their derivatives for the GPU backends, declared for both builds
// (ember::kernels::cuda by nvcc, ember::kernels::emu by g++).
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

// requires: t is f32 or f64 (std::invalid_argument otherwise); x, y (saved, dy, dx) hold n
//           contiguous elements of t on the backend's device; outputs do not overlap inputs.
// ensures:  y = act(x); dx = dy * act'(saved), where saved is the forward output y for sigmoid
//           and tanh and the input x for every other activation (backward_uses_output): the
//           formulas of kernels/activation_math.h, which the CPU kernels share, up to the device's
//           rounding of exp/erf/tanh and FMA contraction. Throws CudaError if a launch fails.
#define EMBER_ACTIVATION_KERNEL_DECLS                                                            \
  void activation_fwd(Activation act, gpu_types::Scalar t, const ActivationParams& p, int64_t n, \
                      const void* x, void* y, ::ember::gpu::Stream stream);                      \
  void activation_bwd(Activation act, gpu_types::Scalar t, const ActivationParams& p, int64_t n, \
                      const void* saved, const void* dy, void* dx, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_ACTIVATION_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_ACTIVATION_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_ACTIVATION_KERNEL_DECLS

// 2-D pooling for the GPU backends, declared for both builds: max pooling with indices, average
// and adaptive average pooling, forward and backward, over contiguous NCHW buffers. Windows,
// divisors, indices and NaN handling are those of kernels/cpu/pool2d.h.
#pragma once

#include <cstdint>

#include "kernels/cuda/gpu_types.cuh"
#include "kernels/pool_shape.h"
#include "runtime/gpu.h"

namespace ember::kernels::gpu_types {

// int64 elements of the workspace max_pool2d_bwd needs: the range of index rows (columns) seen
// at each output row (column), and the range of output rows (columns) to visit per input row
// (column).
inline int64_t max_pool2d_bwd_workspace(const PoolShape& s) {
  return 2 * (s.oh + s.ow + s.h + s.w);
}

}  // namespace ember::kernels::gpu_types

// requires: t is f32 or f64 (std::invalid_argument otherwise); x/dx hold s.planes() contiguous
//           planes of s.h x s.w elements of t, y/dy/idx planes of s.oh x s.ow; the window fields
//           of s are valid (ops/pool2d.cpp checks them).
// ensures:  the forwards write every output element: y = the window's maximum and idx its
//           position h*W + w in the plane (the first maximum; a NaN wins, the last NaN giving
//           the index), or the window's average, or the adaptive window's average. The backwards
//           write every element of dx as a gather: each input element sums, in increasing output
//           order, the gradients of the outputs that chose it (max) or whose window holds it
//           (average), so results are deterministic and match the CPU's scatter order.
//           max_pool2d_bwd finds the outputs to visit from the indices themselves (the op has no
//           window parameters), in `workspace` (max_pool2d_bwd_workspace(s) int64 elements on
//           the device); indices outside the plane are ignored. Throws CudaError if a launch
//           fails.
#define EMBER_POOL2D_KERNEL_DECLS                                                                  \
  void max_pool2d_fwd(gpu_types::Scalar t, const PoolShape& s, const void* x, void* y,             \
                      int64_t* idx, ::ember::gpu::Stream stream);                                  \
  void max_pool2d_bwd(gpu_types::Scalar t, const PoolShape& s, const void* dy, const int64_t* idx, \
                      void* dx, int64_t* workspace, ::ember::gpu::Stream stream);                  \
  void avg_pool2d_fwd(gpu_types::Scalar t, const PoolShape& s, const void* x, void* y,             \
                      ::ember::gpu::Stream stream);                                                \
  void avg_pool2d_bwd(gpu_types::Scalar t, const PoolShape& s, const void* dy, void* dx,           \
                      ::ember::gpu::Stream stream);                                                \
  void adaptive_avg_pool2d_fwd(gpu_types::Scalar t, const PoolShape& s, const void* x, void* y,    \
                               ::ember::gpu::Stream stream);                                       \
  void adaptive_avg_pool2d_bwd(gpu_types::Scalar t, const PoolShape& s, const void* dy, void* dx,  \
                               ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_POOL2D_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_POOL2D_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_POOL2D_KERNEL_DECLS

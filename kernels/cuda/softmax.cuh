// softmax and log_softmax along one dim for the GPU backends, declared for both builds. The data
// is contiguous and viewed as [outer, dim, inner] (inner = 1 when the dim is the last one).
#pragma once

#include <cstdint>

#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

namespace ember::kernels::gpu_types {

struct SoftmaxDims {
  int64_t outer = 1, dim = 1, inner = 1;
};

}  // namespace ember::kernels::gpu_types

// requires: t is f32 or f64 (std::invalid_argument otherwise); x, y (dy, dx) hold
//           outer * dim * inner contiguous elements of t on the backend's device, outputs not
//           overlapping inputs.
// ensures:  softmax_fwd: y = exp(x - max) / sum, or x - (max + log(sum)) for log, along dim
//           (sums in double, the max subtracted first, a row of -inf takes max 0), as
//           kernels/cpu/softmax; softmax_bwd from the forward output y: dx = y * (dy - sum(dy * y))
//           or dy - exp(y) * sum(dy). Rows along the last dim run one warp per row (up to 1024
//           elements) or one block per row; along an inner dim each thread takes one
//           (outer, inner) column. Throws CudaError if a launch fails.
#define EMBER_SOFTMAX_KERNEL_DECLS                                                    \
  void softmax_fwd(gpu_types::Scalar t, const gpu_types::SoftmaxDims& dims, bool log, \
                   const void* x, void* y, ::ember::gpu::Stream stream);              \
  void softmax_bwd(gpu_types::Scalar t, const gpu_types::SoftmaxDims& dims, bool log, \
                   const void* y, const void* dy, void* dx, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_SOFTMAX_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_SOFTMAX_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_SOFTMAX_KERNEL_DECLS

// Row reductions for the GPU backends, declared for both builds. ops/ permutes the reduced dims
// last and makes the input contiguous, so every reduction is one over the rows of a matrix.
#pragma once

#include <cstdint>

#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

// requires: `in` holds rows x n contiguous elements of t; mean/var/std: t is f32 or f64
//           (std::invalid_argument otherwise); `out` holds `rows` elements of t, of int64 for
//           argmax/argmin and for the sum of an integer or bool t; amax/amin/argmax/argmin need
//           n >= 1.
// ensures:  out[r] = op over row r. Sums accumulate in double (floating t, as the CPU kernels
//           do) or int64; var/std divide the sum of squared deviations from the mean by
//           max(n - correction, 0); max/min propagate NaN; argmax/argmin give the index of the
//           first extreme (a NaN counts as the extreme). Throws CudaError if the launch fails.
#define EMBER_REDUCE_KERNEL_DECLS                                                        \
  void reduce_rows(gpu_types::ReduceOp op, gpu_types::Scalar t, int64_t rows, int64_t n, \
                   int64_t correction, const void* in, void* out, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_REDUCE_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_REDUCE_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_REDUCE_KERNEL_DECLS

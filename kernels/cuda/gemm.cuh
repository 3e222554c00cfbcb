// Tiled (batched) GEMM for the GPU backends, declared for both builds: C = A x B on strided
// operands, which is how ops::matmul/mm/bmm run on `cuda` and `emu`.
#pragma once

#include <cstdint>

#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

// requires: t is f32 (SGEMM) or f64 (DGEMM), std::invalid_argument otherwise; A, B addressed
//           through shape's strides (any layout: a transpose is a swap of row and column
//           strides); C contiguous [batch, m, n], not aliasing A or B; any m, n, k >= 0.
// ensures:  C written in full (zeros when k == 0), accumulating in t; throws CudaError if the
//           launch fails.
#define EMBER_GEMM_KERNEL_DECLS                                                            \
  void gemm_batched(gpu_types::Scalar t, const gpu_types::GemmShape& shape, const void* a, \
                    const void* b, void* c, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_GEMM_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_GEMM_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_GEMM_KERNEL_DECLS

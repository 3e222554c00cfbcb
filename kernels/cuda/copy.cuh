// Strided copy with dtype conversion on one GPU device, declared for both builds. It is what
// Tensor::copy_, contiguous() and to(dtype) run for tensors on `cuda` and `emu` (Note [Copies
// through the host] in runtime/tensor.cpp).
#pragma once

#include <cstdint>

#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

// requires: dst and src on the backend's device; index.strides[0] / [1] address dst / src (in
//           elements of their own dtype) over index.sizes; dst does not overlap src.
// ensures:  dst[i] = src[i] converted as static_cast does, except that a conversion to bool is
//           `x != 0` (as ember::scalar_cast); throws CudaError if the launch fails.
#define EMBER_COPY_KERNEL_DECLS                                                          \
  void copy_strided(gpu_types::Scalar dst_t, gpu_types::Scalar src_t,                    \
                    const gpu_types::StridedIndex<2>& index, void* dst, const void* src, \
                    ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_COPY_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_COPY_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_COPY_KERNEL_DECLS

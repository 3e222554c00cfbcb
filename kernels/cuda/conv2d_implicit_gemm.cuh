// Implicit-GEMM 2-D convolution on the GPU backends, declared for both builds: each direction is
// one GEMM per group whose operands are gathered from the NCHW tensors tile by tile, with no
// im2col buffer (`implicit_gemm`, the fast algorithm; see the .cu for the mapping and tiles).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/conv_shape.h"
#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

// All: requires t is f32 or f64 (std::invalid_argument otherwise); buffers contiguous in the
//      layouts of kernels/conv_shape.h, outputs not aliasing inputs; s.oh, s.ow filled in; any
//      stride/padding/dilation/groups. ensures: the output written in full, accumulating in t;
//      throws CudaError if a launch fails.
// conv2d_fwd_implicit_gemm:        y = conv(x, w) (+ bias[k] when bias is not null).
// conv2d_bwd_data_implicit_gemm:   dx = dL/dx from dy.
// conv2d_implicit_gemm_workspace:  the bytes conv2d_bwd_filter_implicit_gemm needs for its
//                                  split-K partial sums (0 when it does not split).
// conv2d_bwd_filter_implicit_gemm: dw = dL/dw from dy and x. requires: ws_bytes >=
//      conv2d_implicit_gemm_workspace(t, s) (std::invalid_argument otherwise). The partial sums
//      are added in a fixed order, so all three directions are deterministic.
#define EMBER_CONV2D_IMPLICIT_GEMM_KERNEL_DECLS                                                   \
  void conv2d_fwd_implicit_gemm(gpu_types::Scalar t, const ConvShape& s, const void* x,           \
                                const void* w, const void* bias, void* y,                         \
                                ::ember::gpu::Stream stream);                                     \
  void conv2d_bwd_data_implicit_gemm(gpu_types::Scalar t, const ConvShape& s, const void* dy,     \
                                     const void* w, void* dx, ::ember::gpu::Stream stream);       \
  size_t conv2d_implicit_gemm_workspace(gpu_types::Scalar t, const ConvShape& s);                 \
  void conv2d_bwd_filter_implicit_gemm(gpu_types::Scalar t, const ConvShape& s, const void* dy,   \
                                       const void* x, void* dw, void* workspace, size_t ws_bytes, \
                                       ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_CONV2D_IMPLICIT_GEMM_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_CONV2D_IMPLICIT_GEMM_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_CONV2D_IMPLICIT_GEMM_KERNEL_DECLS

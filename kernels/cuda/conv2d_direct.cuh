// Direct 2-D convolution on the GPU backends, declared for both builds: the definition's loops,
// one thread per output element. The reference algorithm on the device (`gpu_direct`), and the
// choice for depthwise-like shapes where a GEMM tile would be mostly empty.
#pragma once

#include <cstdint>

#include "kernels/conv_shape.h"
#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

// All three: requires t is f32 or f64 (std::invalid_argument otherwise); every buffer contiguous
//           in the layouts of kernels/conv_shape.h (x NCHW, w KCRS, y NCHW), outputs not aliasing
//           inputs; s.oh, s.ow filled in; any stride/padding/dilation/groups.
//           ensures: the output written in full, accumulating in t; each element is summed in a
//           fixed order (deterministic). Throws CudaError if the launch fails.
// conv2d_fwd_direct:        y = conv(x, w) (+ bias[k] when bias is not null).
// conv2d_bwd_data_direct:   dx = dL/dx from dy.
// conv2d_bwd_filter_direct: dw = dL/dw from dy and x.
#define EMBER_CONV2D_DIRECT_KERNEL_DECLS                                                        \
  void conv2d_fwd_direct(gpu_types::Scalar t, const ConvShape& s, const void* x, const void* w, \
                         const void* bias, void* y, ::ember::gpu::Stream stream);               \
  void conv2d_bwd_data_direct(gpu_types::Scalar t, const ConvShape& s, const void* dy,          \
                              const void* w, void* dx, ::ember::gpu::Stream stream);            \
  void conv2d_bwd_filter_direct(gpu_types::Scalar t, const ConvShape& s, const void* dy,        \
                                const void* x, void* dw, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_CONV2D_DIRECT_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_CONV2D_DIRECT_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_CONV2D_DIRECT_KERNEL_DECLS

// Direct convolution: each direction is the definition's sum (kernels/conv2d_direct_math.h, which
// the CPU kernels share), one thread per output element in a grid-stride loop, so the order of
// every sum is fixed. Offsets are 64-bit: a tensor may hold more than 2^31 elements.
// Work counted (EMBER_COUNT_WORK): 2 flops and two loads per multiply-add, one store per output
// and the forward's bias load.
#include "kernels/conv2d_direct_math.h"
#include "kernels/cuda/compat.h"
#include "kernels/kernel_table.h"
#include "kernels/cuda/device_utils.cuh"

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

template <typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_fwd_direct_kernel(ConvShape s, const T* __restrict__ x, const T* __restrict__ w,
                             const T* __restrict__ bias, T* __restrict__ y) {
  const int64_t total = s.n * s.k * s.oh * s.ow;
  int64_t taps = 0, outputs = 0;
  for (int64_t i = global_thread(); i < total; i += grid_threads(), ++outputs) {
    const int64_t q = i % s.ow, p = (i / s.ow) % s.oh, k = (i / (s.ow * s.oh)) % s.k;
    const int64_t n = i / (s.ow * s.oh * s.k);
    y[i] = conv2d_direct_fwd_at(s, x, w, bias, n, k, p, q, TapCount{&taps});
  }
  EMBER_COUNT_WORK(2 * taps, (2 * taps + outputs * (bias != nullptr ? 2 : 1)) * sizeof(T));
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_bwd_data_direct_kernel(ConvShape s, const T* __restrict__ dy, const T* __restrict__ w,
                                  T* __restrict__ dx) {
  const int64_t total = s.n * s.c * s.h * s.w;
  int64_t taps = 0, outputs = 0;
  for (int64_t i = global_thread(); i < total; i += grid_threads(), ++outputs) {
    const int64_t iw = i % s.w, ih = (i / s.w) % s.h, c = (i / (s.w * s.h)) % s.c;
    const int64_t n = i / (s.w * s.h * s.c);
    dx[i] = conv2d_direct_bwd_data_at(s, dy, w, n, c, ih, iw, TapCount{&taps});
  }
  EMBER_COUNT_WORK(2 * taps, (2 * taps + outputs) * sizeof(T));
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_bwd_filter_direct_kernel(ConvShape s, const T* __restrict__ dy, const T* __restrict__ x,
                                    T* __restrict__ dw) {
  const int64_t cg = s.c / s.groups;
  const int64_t total = s.k * cg * s.r * s.s;
  int64_t taps = 0, outputs = 0;
  for (int64_t i = global_thread(); i < total; i += grid_threads(), ++outputs) {
    const int64_t t = i % s.s, r = (i / s.s) % s.r, c = (i / (s.s * s.r)) % cg;
    const int64_t k = i / (s.s * s.r * cg);
    dw[i] = conv2d_direct_bwd_filter_at(s, dy, x, k, c, r, t, TapCount{&taps});
  }
  EMBER_COUNT_WORK(2 * taps, (2 * taps + outputs) * sizeof(T));
}

}  // namespace

void conv2d_fwd_direct(DType t, const ConvShape& s, const void* x, const void* w, const void* bias,
                       void* y, gpu::Stream stream) {
  dispatch_float(t, "conv2d_fwd_direct", [&](auto z) {
    using T = decltype(z);
    const int64_t total = s.n * s.k * s.oh * s.ow;
    if (total == 0) return;
    EMBER_LAUNCH(conv2d_fwd_direct_kernel<T>, dim3(blocks_for(total)), dim3(kBlock), 0, stream, s,
                 static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
                 static_cast<T*>(y));
  });
}

void conv2d_bwd_data_direct(DType t, const ConvShape& s, const void* dy, const void* w, void* dx,
                            gpu::Stream stream) {
  dispatch_float(t, "conv2d_bwd_data_direct", [&](auto z) {
    using T = decltype(z);
    const int64_t total = s.n * s.c * s.h * s.w;
    if (total == 0) return;
    EMBER_LAUNCH(conv2d_bwd_data_direct_kernel<T>, dim3(blocks_for(total)), dim3(kBlock), 0, stream,
                 s, static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx));
  });
}

void conv2d_bwd_filter_direct(DType t, const ConvShape& s, const void* dy, const void* x, void* dw,
                              gpu::Stream stream) {
  dispatch_float(t, "conv2d_bwd_filter_direct", [&](auto z) {
    using T = decltype(z);
    const int64_t total = s.k * (s.c / s.groups) * s.r * s.s;
    if (total == 0) return;
    EMBER_LAUNCH(conv2d_bwd_filter_direct_kernel<T>, dim3(blocks_for(total)), dim3(kBlock), 0,
                 stream, s, static_cast<const T*>(dy), static_cast<const T*>(x),
                 static_cast<T*>(dw));
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

// Direct convolution: each direction is the definition's sum, one thread per output element in
// a grid-stride loop, so the order of every sum is fixed. Offsets are 64-bit: a tensor may hold
// more than 2^31 elements.
//   forward          y[n,k,p,q]  = sum_{c,r,s} x[n, g*C/G + c, p*sh - ph + r*dh, q*sw - pw + s*dw]
//                                              * w[k, c, r, s]                 (g = k / (K/G))
//   backward-data    dx[n,c,h,w] = sum_{k in c's group, r, s} dy[n, k, p, q] * w[k, c % (C/G), r,
//   s]
//                                  over the taps whose p = (h + ph - r*dh) / sh (and q alike)
//                                  divide exactly and land inside the output
//   backward-filter  dw[k,c,r,s] = sum_{n,p,q} dy[n, k, p, q] * x[n, g*C/G + c, ...as forward]
#include "kernels/cuda/compat.h"
#include "kernels/cuda/conv2d_direct.cuh"
#include "kernels/cuda/device_utils.cuh"

#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using gpu_types::Scalar;
using namespace detail;

template <typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_fwd_direct_kernel(ConvShape s, const T* __restrict__ x, const T* __restrict__ w,
                             const T* __restrict__ bias, T* __restrict__ y) {
  const int64_t cg = s.c / s.groups, kg = s.k / s.groups;
  const int64_t total = s.n * s.k * s.oh * s.ow;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t q = i % s.ow, p = (i / s.ow) % s.oh, k = (i / (s.ow * s.oh)) % s.k;
    const int64_t n = i / (s.ow * s.oh * s.k);
    const T* xg = x + (n * s.c + (k / kg) * cg) * s.h * s.w;
    const T* wk = w + k * cg * s.r * s.s;
    T acc = bias != nullptr ? bias[k] : T(0);
    for (int64_t c = 0; c < cg; ++c) {
      for (int64_t r = 0; r < s.r; ++r) {
        const int64_t ih = p * s.stride_h - s.pad_h + r * s.dil_h;
        if (ih < 0 || ih >= s.h) continue;
        for (int64_t t = 0; t < s.s; ++t) {
          const int64_t iw = q * s.stride_w - s.pad_w + t * s.dil_w;
          if (iw < 0 || iw >= s.w) continue;
          acc += xg[(c * s.h + ih) * s.w + iw] * wk[(c * s.r + r) * s.s + t];
        }
      }
    }
    y[i] = acc;
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_bwd_data_direct_kernel(ConvShape s, const T* __restrict__ dy, const T* __restrict__ w,
                                  T* __restrict__ dx) {
  const int64_t cg = s.c / s.groups, kg = s.k / s.groups;
  const int64_t total = s.n * s.c * s.h * s.w;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t iw = i % s.w, ih = (i / s.w) % s.h, c = (i / (s.w * s.h)) % s.c;
    const int64_t n = i / (s.w * s.h * s.c);
    const int64_t g = c / cg, cl = c % cg;
    T acc = T(0);
    for (int64_t k = g * kg; k < (g + 1) * kg; ++k) {
      const T* dyk = dy + (n * s.k + k) * s.oh * s.ow;
      const T* wk = w + (k * cg + cl) * s.r * s.s;
      for (int64_t r = 0; r < s.r; ++r) {
        const int64_t ph = ih + s.pad_h - r * s.dil_h;  // = p * stride_h for a tap that lands
        if (ph < 0 || ph % s.stride_h != 0 || ph / s.stride_h >= s.oh) continue;
        const int64_t p = ph / s.stride_h;
        for (int64_t t = 0; t < s.s; ++t) {
          const int64_t pw = iw + s.pad_w - t * s.dil_w;
          if (pw < 0 || pw % s.stride_w != 0 || pw / s.stride_w >= s.ow) continue;
          acc += dyk[p * s.ow + pw / s.stride_w] * wk[r * s.s + t];
        }
      }
    }
    dx[i] = acc;
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_bwd_filter_direct_kernel(ConvShape s, const T* __restrict__ dy, const T* __restrict__ x,
                                    T* __restrict__ dw) {
  const int64_t cg = s.c / s.groups, kg = s.k / s.groups;
  const int64_t total = s.k * cg * s.r * s.s;
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const int64_t t = i % s.s, r = (i / s.s) % s.r, c = (i / (s.s * s.r)) % cg;
    const int64_t k = i / (s.s * s.r * cg);
    const int64_t xc = (k / kg) * cg + c;
    T acc = T(0);
    for (int64_t n = 0; n < s.n; ++n) {
      const T* dyk = dy + (n * s.k + k) * s.oh * s.ow;
      const T* xn = x + (n * s.c + xc) * s.h * s.w;
      for (int64_t p = 0; p < s.oh; ++p) {
        const int64_t ih = p * s.stride_h - s.pad_h + r * s.dil_h;
        if (ih < 0 || ih >= s.h) continue;
        for (int64_t q = 0; q < s.ow; ++q) {
          const int64_t iw = q * s.stride_w - s.pad_w + t * s.dil_w;
          if (iw < 0 || iw >= s.w) continue;
          acc += dyk[p * s.ow + q] * xn[ih * s.w + iw];
        }
      }
    }
    dw[i] = acc;
  }
}

void check_scalar(Scalar t, const char* op) {
  if (t != Scalar::f32 && t != Scalar::f64)
    throw std::invalid_argument(std::string(op) + ": only float32 and float64 kernels exist");
}

}  // namespace

void conv2d_fwd_direct(Scalar t, const ConvShape& s, const void* x, const void* w, const void* bias,
                       void* y, gpu::Stream stream) {
  check_scalar(t, "conv2d_fwd_direct");
  const int64_t total = s.n * s.k * s.oh * s.ow;
  if (total == 0) return;
  if (t == Scalar::f32)
    EMBER_LAUNCH(conv2d_fwd_direct_kernel<float>, dim3(blocks_for(total)), dim3(kBlock), 0, stream,
                 s, static_cast<const float*>(x), static_cast<const float*>(w),
                 static_cast<const float*>(bias), static_cast<float*>(y));
  else
    EMBER_LAUNCH(conv2d_fwd_direct_kernel<double>, dim3(blocks_for(total)), dim3(kBlock), 0, stream,
                 s, static_cast<const double*>(x), static_cast<const double*>(w),
                 static_cast<const double*>(bias), static_cast<double*>(y));
}

void conv2d_bwd_data_direct(Scalar t, const ConvShape& s, const void* dy, const void* w, void* dx,
                            gpu::Stream stream) {
  check_scalar(t, "conv2d_bwd_data_direct");
  const int64_t total = s.n * s.c * s.h * s.w;
  if (total == 0) return;
  if (t == Scalar::f32)
    EMBER_LAUNCH(conv2d_bwd_data_direct_kernel<float>, dim3(blocks_for(total)), dim3(kBlock), 0,
                 stream, s, static_cast<const float*>(dy), static_cast<const float*>(w),
                 static_cast<float*>(dx));
  else
    EMBER_LAUNCH(conv2d_bwd_data_direct_kernel<double>, dim3(blocks_for(total)), dim3(kBlock), 0,
                 stream, s, static_cast<const double*>(dy), static_cast<const double*>(w),
                 static_cast<double*>(dx));
}

void conv2d_bwd_filter_direct(Scalar t, const ConvShape& s, const void* dy, const void* x, void* dw,
                              gpu::Stream stream) {
  check_scalar(t, "conv2d_bwd_filter_direct");
  const int64_t total = s.k * (s.c / s.groups) * s.r * s.s;
  if (total == 0) return;
  if (t == Scalar::f32)
    EMBER_LAUNCH(conv2d_bwd_filter_direct_kernel<float>, dim3(blocks_for(total)), dim3(kBlock), 0,
                 stream, s, static_cast<const float*>(dy), static_cast<const float*>(x),
                 static_cast<float*>(dw));
  else
    EMBER_LAUNCH(conv2d_bwd_filter_direct_kernel<double>, dim3(blocks_for(total)), dim3(kBlock), 0,
                 stream, s, static_cast<const double*>(dy), static_cast<const double*>(x),
                 static_cast<double*>(dw));
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

// The direct convolution's sums, one output element at a time: the definition that the CPU
// kernels (kernels/cpu/conv2d_direct.cpp) and the GPU kernels (kernels/cuda/conv2d_direct.cu) both
// evaluate, in the same order, so the two devices round alike (up to the GPU's FMA contraction).
// Layouts are those of kernels/conv_shape.h; pointers are to the whole tensors.
//   forward          y[n,k,p,q]  = sum_{c,r,t} x[n, g*C/G + c, p*sh - ph + r*dh, q*sw - pw + t*dw]
//                                              * w[k, c, r, t]                 (g = k / (K/G))
//   backward-data    dx[n,c,h,v] = sum_{k in c's group, r, t} dy[n, k, p, q] * w[k, c % (C/G), r,
//   t]
//                                  over the taps whose p = (h + ph - r*dh) / sh (and q alike)
//                                  divide exactly and land inside the output
//   backward-filter  dw[k,c,r,t] = sum_{n,p,q} dy[n, k, p, q] * x[n, g*C/G + c, ...as forward]
#pragma once

#include <cstdint>

#include "kernels/conv_shape.h"
#include "runtime/host_device.h"

namespace ember::kernels {

// What a sum tells its caller of each multiply-add it makes: nothing by default; the emulated GPU
// kernels pass a TapCount to report their work (EMBER_COUNT_WORK, kernels/cuda/compat.h).
struct NoTaps {
  EMBER_HOST_DEVICE void operator()() const {}
};
struct TapCount {
  int64_t* taps;
  EMBER_HOST_DEVICE void operator()() const { ++*taps; }
};

// y[n, k, p, q], bias[k] included when bias is not null.
template <typename T, typename Taps = NoTaps>
EMBER_HOST_DEVICE T conv2d_direct_fwd_at(const ConvShape& s, const T* x, const T* w, const T* bias,
                                         int64_t n, int64_t k, int64_t p, int64_t q,
                                         Taps tap = {}) {
  const int64_t cg = s.c / s.groups, kg = s.k / s.groups;
  const T* xg = x + (n * s.c + (k / kg) * cg) * s.h * s.w;
  const T* wk = w + k * cg * s.r * s.s;
  T acc = bias != nullptr ? bias[k] : T(0);
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t r = 0; r < s.r; ++r) {
      const int64_t ih = p * s.stride_h - s.pad_h + r * s.dil_h;
      if (ih < 0 || ih >= s.h) continue;
      for (int64_t t = 0; t < s.s; ++t) {
        const int64_t iw = q * s.stride_w - s.pad_w + t * s.dil_w;
        if (iw < 0 || iw >= s.w) continue;
        acc += xg[(c * s.h + ih) * s.w + iw] * wk[(c * s.r + r) * s.s + t];
        tap();
      }
    }
  return acc;
}

// dx[n, c, ih, iw]: input position ih receives from output row p when ih = p*sh - ph + r*dh.
template <typename T, typename Taps = NoTaps>
EMBER_HOST_DEVICE T conv2d_direct_bwd_data_at(const ConvShape& s, const T* dy, const T* w,
                                              int64_t n, int64_t c, int64_t ih, int64_t iw,
                                              Taps tap = {}) {
  const int64_t cg = s.c / s.groups, kg = s.k / s.groups;
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
        tap();
      }
    }
  }
  return acc;
}

// dw[k, c, r, t], c counted within k's group.
template <typename T, typename Taps = NoTaps>
EMBER_HOST_DEVICE T conv2d_direct_bwd_filter_at(const ConvShape& s, const T* dy, const T* x,
                                                int64_t k, int64_t c, int64_t r, int64_t t,
                                                Taps tap = {}) {
  const int64_t cg = s.c / s.groups, kg = s.k / s.groups;
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
        tap();
      }
    }
  }
  return acc;
}

}  // namespace ember::kernels

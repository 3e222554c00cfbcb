// Direct convolution: one output element per loop iteration, summing over its window. Every
// output element is owned by one iteration, so the loops parallelise without atomics and the
// result does not depend on the thread count. The sums are kernels/conv2d_direct_math.h's, which
// the GPU kernels share.
#include "kernels/kernel_table.h"

#include <algorithm>

#include "kernels/conv2d_direct_math.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

// Depthwise (groups == C == K: one filter per channel): each output plane is a 2-D stencil of
// one input plane. Output rows accumulate tap by tap, each tap a multiply-add over the row's
// range of columns whose input lies inside the image (a loop the compiler vectorises), in the
// order conv2d_direct_fwd_at sums (bias, then r, then q), so both give the same values.
template <typename T>
void fwd_depthwise(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (par)
  for (int64_t plane = 0; plane < s.n * s.c; ++plane) {
    const int64_t c = plane % s.c;
    const T* xp = x + plane * s.h * s.w;
    const T* wc = w + c * s.r * s.s;
    T* yp = y + plane * s.oh * s.ow;
    for (int64_t oh = 0; oh < s.oh; ++oh) {
      T* row = yp + oh * s.ow;
      const T b = bias != nullptr ? bias[c] : T(0);
      for (int64_t ow = 0; ow < s.ow; ++ow) row[ow] = b;
      for (int64_t r = 0; r < s.r; ++r) {
        const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dil_h;
        if (ih < 0 || ih >= s.h) continue;
        const T* xr = xp + ih * s.w;
        for (int64_t q = 0; q < s.s; ++q) {
          // Columns ow with 0 <= ow * stride - pad + q * dil < W.
          const int64_t off = q * s.dil_w - s.pad_w;
          const int64_t lo = off >= 0 ? 0 : (-off + s.stride_w - 1) / s.stride_w;
          const int64_t hi = std::min(s.ow, off >= s.w ? 0 : (s.w - 1 - off) / s.stride_w + 1);
          const T wv = wc[r * s.s + q];
          if (s.stride_w == 1) {
            const T* xs = xr + off;
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] += xs[ow] * wv;
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] += xr[ow * s.stride_w + off] * wv;
          }
        }
      }
    }
  }
}

template <typename T>
void fwd(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  if (s.groups == s.c && s.k == s.c && s.groups > 1) return fwd_depthwise(s, x, w, bias, y);
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) collapse(2) if (par)
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k) {
      T* yk = y + (n * s.k + k) * s.oh * s.ow;
      for (int64_t oh = 0; oh < s.oh; ++oh)
        for (int64_t ow = 0; ow < s.ow; ++ow)
          yk[oh * s.ow + ow] = conv2d_direct_fwd_at(s, x, w, bias, n, k, oh, ow);
    }
}

template <typename T>
void bwd_data(const ConvShape& s, const T* dy, const T* w, T* dx) {
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) collapse(2) if (par)
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c) {
      T* dxc = dx + (n * s.c + c) * s.h * s.w;
      for (int64_t ih = 0; ih < s.h; ++ih)
        for (int64_t iw = 0; iw < s.w; ++iw)
          dxc[ih * s.w + iw] = conv2d_direct_bwd_data_at(s, dy, w, n, c, ih, iw);
    }
}

template <typename T>
void bwd_filter(const ConvShape& s, const T* dy, const T* x, T* dw) {
  const int64_t cg = s.cg();
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) collapse(2) if (par)
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < s.r; ++r)
        for (int64_t q = 0; q < s.s; ++q)
          dw[((k * cg + c) * s.r + r) * s.s + q] =
              conv2d_direct_bwd_filter_at(s, dy, x, k, c, r, q);
}

}  // namespace

void conv2d_fwd_direct(DType t, const ConvShape& s, const void* x, const void* w, const void* bias,
                       void* y, Stream) {
  dispatch_float(t, "conv2d", [&](auto z) {
    using T = decltype(z);
    fwd(s, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
        static_cast<T*>(y));
  });
}

void conv2d_bwd_data_direct(DType t, const ConvShape& s, const void* dy, const void* w, void* dx,
                            Stream) {
  dispatch_float(t, "conv2d_backward_data", [&](auto z) {
    using T = decltype(z);
    bwd_data(s, static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx));
  });
}

void conv2d_bwd_filter_direct(DType t, const ConvShape& s, const void* dy, const void* x, void* dw,
                              Stream) {
  dispatch_float(t, "conv2d_backward_filter", [&](auto z) {
    using T = decltype(z);
    bwd_filter(s, static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dw));
  });
}

}  // namespace ember::kernels::cpu

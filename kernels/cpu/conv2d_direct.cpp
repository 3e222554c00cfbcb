// Direct convolution: one output element per loop iteration, summing over its window. Every
// output element is owned by one iteration, so the loops parallelise without atomics and the
// result does not depend on the thread count.
#include "kernels/cpu/conv2d_direct.h"

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

template <typename T>
void fwd(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  const int64_t cg = s.cg(), kg = s.kg();
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) collapse(2) if (par)
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k) {
      const int64_t g = k / kg;
      const T* wk = w + k * cg * s.r * s.s;
      T* yk = y + (n * s.k + k) * s.oh * s.ow;
      for (int64_t oh = 0; oh < s.oh; ++oh)
        for (int64_t ow = 0; ow < s.ow; ++ow) {
          T acc = bias ? bias[k] : T(0);
          for (int64_t c = 0; c < cg; ++c) {
            const T* xc = x + (n * s.c + g * cg + c) * s.h * s.w;
            for (int64_t r = 0; r < s.r; ++r) {
              const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dil_h;
              if (ih < 0 || ih >= s.h) continue;
              for (int64_t q = 0; q < s.s; ++q) {
                const int64_t iw = ow * s.stride_w - s.pad_w + q * s.dil_w;
                if (iw < 0 || iw >= s.w) continue;
                acc += xc[ih * s.w + iw] * wk[(c * s.r + r) * s.s + q];
              }
            }
          }
          yk[oh * s.ow + ow] = acc;
        }
    }
}

// Input position ih receives from output row oh when ih = oh * stride - pad + r * dil.
template <typename T>
void bwd_data(const ConvShape& s, const T* dy, const T* w, T* dx) {
  const int64_t cg = s.cg(), kg = s.kg();
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) collapse(2) if (par)
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c) {
      const int64_t g = c / cg, cl = c % cg;
      T* dxc = dx + (n * s.c + c) * s.h * s.w;
      for (int64_t ih = 0; ih < s.h; ++ih)
        for (int64_t iw = 0; iw < s.w; ++iw) {
          T acc = 0;
          for (int64_t k = g * kg; k < (g + 1) * kg; ++k) {
            const T* dyk = dy + (n * s.k + k) * s.oh * s.ow;
            const T* wkc = w + (k * cg + cl) * s.r * s.s;
            for (int64_t r = 0; r < s.r; ++r) {
              const int64_t th = ih + s.pad_h - r * s.dil_h;
              if (th < 0 || th % s.stride_h != 0 || th / s.stride_h >= s.oh) continue;
              for (int64_t q = 0; q < s.s; ++q) {
                const int64_t tw = iw + s.pad_w - q * s.dil_w;
                if (tw < 0 || tw % s.stride_w != 0 || tw / s.stride_w >= s.ow) continue;
                acc += dyk[(th / s.stride_h) * s.ow + tw / s.stride_w] * wkc[r * s.s + q];
              }
            }
          }
          dxc[ih * s.w + iw] = acc;
        }
    }
}

template <typename T>
void bwd_filter(const ConvShape& s, const T* dy, const T* x, T* dw) {
  const int64_t cg = s.cg(), kg = s.kg();
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel for schedule(static) collapse(2) if (par)
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t c = 0; c < cg; ++c) {
      const int64_t g = k / kg;
      for (int64_t r = 0; r < s.r; ++r)
        for (int64_t q = 0; q < s.s; ++q) {
          T acc = 0;
          for (int64_t n = 0; n < s.n; ++n) {
            const T* dyk = dy + (n * s.k + k) * s.oh * s.ow;
            const T* xc = x + (n * s.c + g * cg + c) * s.h * s.w;
            for (int64_t oh = 0; oh < s.oh; ++oh) {
              const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dil_h;
              if (ih < 0 || ih >= s.h) continue;
              for (int64_t ow = 0; ow < s.ow; ++ow) {
                const int64_t iw = ow * s.stride_w - s.pad_w + q * s.dil_w;
                if (iw < 0 || iw >= s.w) continue;
                acc += dyk[oh * s.ow + ow] * xc[ih * s.w + iw];
              }
            }
          }
          dw[((k * cg + c) * s.r + r) * s.s + q] = acc;
        }
    }
}

}  // namespace

void conv2d_fwd_direct(DType t, const ConvShape& s, const void* x, const void* w, const void* bias,
                       void* y) {
  dispatch_float(t, "conv2d", [&](auto z) {
    using T = decltype(z);
    fwd(s, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
        static_cast<T*>(y));
  });
}

void conv2d_bwd_data_direct(DType t, const ConvShape& s, const void* dy, const void* w, void* dx) {
  dispatch_float(t, "conv2d_backward_data", [&](auto z) {
    using T = decltype(z);
    bwd_data(s, static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx));
  });
}

void conv2d_bwd_filter_direct(DType t, const ConvShape& s, const void* dy, const void* x,
                              void* dw) {
  dispatch_float(t, "conv2d_backward_filter", [&](auto z) {
    using T = decltype(z);
    bwd_filter(s, static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dw));
  });
}

}  // namespace ember::kernels::cpu

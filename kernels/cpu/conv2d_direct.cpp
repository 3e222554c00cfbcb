// Direct convolution: one output element per loop iteration, summing over its window. Every
// output element is owned by one iteration, so the loops parallelise without atomics and the
// result does not depend on the thread count. The sums are kernels/conv2d_direct_math.h's, which
// the GPU kernels share.
#include "kernels/kernel_table.h"

#include "kernels/conv2d_direct_math.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

template <typename T>
void fwd(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
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

// Direct convolution: one output element per loop iteration, summing over its window. Every
// output element is owned by one iteration, so the loops parallelise without atomics and the
// result does not depend on the thread count. The sums are kernels/conv2d_direct_math.h's, which
// the GPU kernels share.
#include "kernels/kernel_table.h"

#include <algorithm>
#include <vector>

#include "kernels/conv2d_direct_math.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

// a[0..n) += w * src[0..n): the inner loop of the depthwise stencil (restrict: no alias test).
template <typename T>
inline void axpy_row(T* __restrict a, const T* __restrict src, T w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] += src[i] * w;
}

// Depthwise (groups == C == K: one filter per channel): each output plane is a 2-D stencil of
// one input plane. The plane is first copied into a zero-bordered buffer holding every position
// a window reaches, so the taps need no bounds tests; with stride 2 the copy splits each row
// into its even and odd columns, so every tap reads consecutive elements. Each output row then
// accumulates tap by tap in a loop over its columns that the compiler vectorises, in the order
// conv2d_direct_fwd_at sums (bias, then r, then q). Other strides read the columns strided.
template <typename T>
void fwd_depthwise(const ConvShape& s, const T* x, const T* w, const T* bias, T* y) {
  // The bordered plane: rows and columns from -pad up to the last one a window reaches.
  const int64_t ph = (s.oh - 1) * s.stride_h + (s.r - 1) * s.dil_h + 1;
  const int64_t pw = (s.ow - 1) * s.stride_w + (s.s - 1) * s.dil_w + 1;
  const bool split = s.stride_w == 2;
  const int64_t half = (pw + 1) / 2;  // columns of each of the even and odd parts
  const int64_t row_len = split ? 2 * half : pw;
  // The input columns [c0, c1) land at bordered columns [c0 + pad, c1 + pad).
  const int64_t c0 = std::max<int64_t>(0, -s.pad_w), c1 = std::min(s.w, pw - s.pad_w);
  const bool par = s.macs() >= kParallelGrain && !omp_in_parallel();
#pragma omp parallel if (par)
  {
    std::vector<T> plane(static_cast<size_t>(ph * row_len)), bordered(static_cast<size_t>(2 * half));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < s.n * s.c; ++p) {
      const int64_t c = p % s.c;
      const T* xp = x + p * s.h * s.w;
      const T* wc = w + c * s.r * s.s;
      for (int64_t row = 0; row < ph; ++row) {
        T* dst = plane.data() + row * row_len;
        const int64_t i = row - s.pad_h;
        if (i < 0 || i >= s.h || c1 <= c0) {
          std::fill(dst, dst + row_len, T(0));
          continue;
        }
        const T* src = xp + i * s.w;
        // The bordered row, then (stride 2) its even and odd columns, in loops with no branch.
        T* row_out = split ? bordered.data() : dst;
        std::fill(row_out, row_out + c0 + s.pad_w, T(0));
        std::copy(src + c0, src + c1, row_out + c0 + s.pad_w);
        std::fill(row_out + c1 + s.pad_w, row_out + (split ? 2 * half : pw), T(0));
        if (split) {
          const T* in = bordered.data();
          for (int64_t k = 0; k < half; ++k) {
            dst[k] = in[2 * k];
            dst[half + k] = in[2 * k + 1];
          }
        }
      }
      T* yp = y + p * s.oh * s.ow;
      const T b = bias != nullptr ? bias[c] : T(0);
      for (int64_t oh = 0; oh < s.oh; ++oh) {
        T* out = yp + oh * s.ow;
        std::fill(out, out + s.ow, b);
        for (int64_t r = 0; r < s.r; ++r) {
          const T* in = plane.data() + (oh * s.stride_h + r * s.dil_h) * row_len;
          for (int64_t q = 0; q < s.s; ++q) {
            const T wv = wc[r * s.s + q];
            const int64_t col = q * s.dil_w;
            if (split) {
              axpy_row(out, in + (col & 1) * half + col / 2, wv, s.ow);
            } else if (s.stride_w == 1) {
              axpy_row(out, in + col, wv, s.ow);
            } else {
              for (int64_t ow = 0; ow < s.ow; ++ow) out[ow] += in[ow * s.stride_w + col] * wv;
            }
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

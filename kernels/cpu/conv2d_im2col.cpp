// im2col + GEMM convolution. For image n and group g, with P = OH*OW output positions and
// CRS = (C/G)*R*S filter taps:
//   forward        Y[n,g]  (Kg x P)   = W[g] (Kg x CRS) * col (CRS x P)
//   backward data  dcol    (CRS x P)  = W[g]^T * dY[n,g], then col2im adds dcol into dX
//   backward filt. dW[g]   (Kg x CRS) += dY[n,g] * col^T
// A pointwise filter (1x1, stride 1, no padding) uses X[n,g] itself as `col`.
// Note [Batched columns]: when an image has few output positions (P small, as in the later
// stages of a ResNet), a GEMM per image is too thin to run fast. Then B images' columns sit side
// by side in one CRS x (B*P) matrix and Y/dY are gathered into Kg x (B*P), so each GEMM is B
// times wider. Only for groups == 1 and non-pointwise filters; the results are the same.
#include "kernels/cpu/conv2d_im2col.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

#include "kernels/cpu/eigen_product.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using Map = Eigen::Map<RowMat<T>>;
template <typename T>
using CMap = Eigen::Map<const RowMat<T>>;

// Images per worker below which threads over the batch beat Eigen's parallel GEMM.
constexpr int64_t kSmallImageMacs = int64_t{1} << 22;

int64_t workers(const ConvShape& s) {
  const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (s.n <= 1 || threads <= 1) return 1;
  if (s.n >= threads || s.macs() / s.n <= kSmallImageMacs) return std::min(s.n, threads);
  return 1;
}

// Images whose columns share one GEMM (Note [Batched columns]): enough for ~512 columns.
constexpr int64_t kMinGemmColumns = 512;
int64_t images_per_gemm(const ConvShape& s) {
  const int64_t p = s.oh * s.ow;
  if (s.groups != 1 || s.is_pointwise() || p == 0 || p >= kMinGemmColumns) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(s.n, kMinGemmColumns / p));
}

int64_t col_elems(const ConvShape& s) {
  return s.is_pointwise() ? 0 : s.cg() * s.r * s.s * s.oh * s.ow;
}

// Per worker: B images' columns, plus (B > 1) a Kg x (B*P) buffer for gathered Y or dY.
int64_t worker_elems(const ConvShape& s) {
  const int64_t b = images_per_gemm(s);
  return b * col_elems(s) + (b > 1 ? b * s.kg() * s.oh * s.ow : 0);
}

int64_t workspace_elems(const ConvShape& s, ConvDirection pass, int64_t nw) {
  return nw * worker_elems(s) + (pass == ConvDirection::backward_filter && nw > 1 ? nw * s.w_numel() : 0);
}

// The workers to use given the workspace the caller provides: fewer than workers(s) when the
// caller sized it in a different threading context (it never overruns the buffer).
int64_t workers_within(const ConvShape& s, ConvDirection pass, size_t ws_bytes, size_t item) {
  int64_t nw = workers(s);
  while (nw > 1 && static_cast<size_t>(workspace_elems(s, pass, nw)) * item > ws_bytes) --nw;
  EMBER_CHECK_VALUE(static_cast<size_t>(workspace_elems(s, pass, nw)) * item <= ws_bytes,
                    "conv2d im2col: workspace of ", ws_bytes, " bytes is too small (need ",
                    workspace_elems(s, pass, nw) * item, ")");
  return nw;
}

// Output positions o in [lo, hi) read input o * stride + off inside [0, in).
void valid_range(int64_t out, int64_t in, int64_t stride, int64_t off, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = in - off <= 0 ? 0 : std::min(out, (in - off + stride - 1) / stride);
  lo = std::min(lo, hi);
}

// col (CRS x P, rows `ld` elements apart) from the C/G channels at x (one image, one group).
template <typename T>
void im2col(const ConvShape& s, const T* x, T* col, int64_t ld) {
  const int64_t cg = s.cg();
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t r = 0; r < s.r; ++r)
      for (int64_t q = 0; q < s.s; ++q) {
        T* row = col + ((c * s.r + r) * s.s + q) * ld;
        const int64_t offw = q * s.dil_w - s.pad_w;
        int64_t lo, hi;
        valid_range(s.ow, s.w, s.stride_w, offw, lo, hi);
        for (int64_t oh = 0; oh < s.oh; ++oh) {
          T* dst = row + oh * s.ow;
          const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dil_h;
          if (ih < 0 || ih >= s.h) {
            std::fill(dst, dst + s.ow, T(0));
            continue;
          }
          const T* src = x + (c * s.h + ih) * s.w + offw;
          std::fill(dst, dst + lo, T(0));
          if (s.stride_w == 1) {
            std::copy(src + lo, src + hi, dst + lo);
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * s.stride_w];
          }
          std::fill(dst + hi, dst + s.ow, T(0));
        }
      }
}

// dx (C/G channels of one image) += col2im(col), col's rows `ld` elements apart.
template <typename T>
void col2im_add(const ConvShape& s, const T* col, T* dx, int64_t ld) {
  const int64_t cg = s.cg();
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t r = 0; r < s.r; ++r)
      for (int64_t q = 0; q < s.s; ++q) {
        const T* row = col + ((c * s.r + r) * s.s + q) * ld;
        const int64_t offw = q * s.dil_w - s.pad_w;
        int64_t lo, hi;
        valid_range(s.ow, s.w, s.stride_w, offw, lo, hi);
        for (int64_t oh = 0; oh < s.oh; ++oh) {
          const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dil_h;
          if (ih < 0 || ih >= s.h) continue;
          const T* src = row + oh * s.ow;
          T* dst = dx + (c * s.h + ih) * s.w + offw;
          if (s.stride_w == 1) {  // unit stride: a loop the compiler vectorises
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += src[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow * s.stride_w] += src[ow];
          }
        }
      }
}

// Runs body(n, worker) for every image: in parallel over `nw` workers, each owning a fixed,
// contiguous run of images (so per-worker results combine in a fixed order).
// One worker runs without an OpenMP region, so its products may use Eigen's threads (an inactive
// enclosing region would make Eigen start a nested team per product).
template <typename F>
void for_images(const ConvShape& s, int64_t nw, F&& body) {
  auto worker = [&](int64_t wk) {
    const int64_t lo = s.n * wk / nw, hi = s.n * (wk + 1) / nw;
    for (int64_t n = lo; n < hi; ++n) body(n, wk);
  };
  run_workers(nw, worker);
}

// Runs body(first, count, worker) over runs of up to `b` consecutive images, each worker owning
// a fixed, contiguous run of images (as for_images).
template <typename F>
void for_chunks(const ConvShape& s, int64_t nw, int64_t b, F&& body) {
  auto worker = [&](int64_t wk) {
    const int64_t lo = s.n * wk / nw, hi = s.n * (wk + 1) / nw;
    for (int64_t n = lo; n < hi; n += b) body(n, std::min(b, hi - n), wk);
  };
  run_workers(nw, worker);
}

// Copies Kg x P blocks of `count` images between NCHW (image stride K*P) and the gathered
// Kg x (count*P) layout.
template <typename T>
void gather_images(const T* src, int64_t k, int64_t p, int64_t count, T* dst) {
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < count; ++j)
      std::memcpy(dst + kk * count * p + j * p, src + (j * k + kk) * p, sizeof(T) * p);
}
template <typename T>
void scatter_images(const T* src, int64_t k, int64_t p, int64_t count, T* dst) {
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < count; ++j)
      std::memcpy(dst + (j * k + kk) * p, src + kk * count * p + j * p, sizeof(T) * p);
}

template <typename T>
void fwd_batched(const ConvShape& s, const T* x, const T* w, const T* bias, T* y, T* ws,
                 int64_t nw) {
  const int64_t k = s.k, crs = s.c * s.r * s.s, p = s.oh * s.ow, b = images_per_gemm(s);
  for_chunks(s, nw, b, [&](int64_t n0, int64_t cnt, int64_t wk) {
    T* col = ws + wk * worker_elems(s);
    T* out = col + b * col_elems(s);
    for (int64_t j = 0; j < cnt; ++j)
      im2col(s, x + (n0 + j) * s.c * s.h * s.w, col + j * p, cnt * p);
    Map<T> o(out, k, cnt * p);
    product_rows(o, CMap<T>(w, k, crs), CMap<T>(col, crs, cnt * p));
    if (bias)
      for (int64_t kk = 0; kk < k; ++kk) o.row(kk).array() += bias[kk];
    scatter_images(out, k, p, cnt, y + n0 * k * p);
  });
}

template <typename T>
void bwd_data_batched(const ConvShape& s, const T* dy, const T* w, T* dx, T* ws, int64_t nw) {
  const int64_t k = s.k, crs = s.c * s.r * s.s, p = s.oh * s.ow, b = images_per_gemm(s);
  for_chunks(s, nw, b, [&](int64_t n0, int64_t cnt, int64_t wk) {
    T* col = ws + wk * worker_elems(s);
    T* g = col + b * col_elems(s);
    gather_images(dy + n0 * k * p, k, p, cnt, g);
    product_rows(Map<T>(col, crs, cnt * p), CMap<T>(w, k, crs).transpose(), CMap<T>(g, k, cnt * p));
    for (int64_t j = 0; j < cnt; ++j) {
      T* dxn = dx + (n0 + j) * s.c * s.h * s.w;
      std::fill(dxn, dxn + s.c * s.h * s.w, T(0));
      col2im_add(s, col + j * p, dxn, cnt * p);
    }
  });
}

template <typename T>
void bwd_filter_batched(const ConvShape& s, const T* dy, const T* x, T* partial_or_dw, T* ws,
                        int64_t nw) {
  const int64_t k = s.k, crs = s.c * s.r * s.s, p = s.oh * s.ow, b = images_per_gemm(s);
  const int64_t wn = s.w_numel();
  for_chunks(s, nw, b, [&](int64_t n0, int64_t cnt, int64_t wk) {
    T* col = ws + wk * worker_elems(s);
    T* g = col + b * col_elems(s);
    T* acc = partial_or_dw + (nw == 1 ? 0 : wk * wn);
    if (n0 == s.n * wk / nw) std::fill(acc, acc + wn, T(0));
    for (int64_t j = 0; j < cnt; ++j)
      im2col(s, x + (n0 + j) * s.c * s.h * s.w, col + j * p, cnt * p);
    gather_images(dy + n0 * k * p, k, p, cnt, g);
    product_rows(Map<T>(acc, k, crs), CMap<T>(g, k, cnt * p),
                 CMap<T>(col, crs, cnt * p).transpose(),
                 /*accumulate=*/true);
  });
}

template <typename T>
void fwd(const ConvShape& s, const T* x, const T* w, const T* bias, T* y, T* ws, size_t ws_bytes) {
  const int64_t cg = s.cg(), kg = s.kg(), crs = cg * s.r * s.s, p = s.oh * s.ow;
  const int64_t nw = workers_within(s, ConvDirection::forward, ws_bytes, sizeof(T)), ce = worker_elems(s);
  if (images_per_gemm(s) > 1) return fwd_batched(s, x, w, bias, y, ws, nw);
  for_images(s, nw, [&](int64_t n, int64_t wk) {
    T* col = ws + wk * ce;
    for (int64_t g = 0; g < s.groups; ++g) {
      const T* xg = x + (n * s.c + g * cg) * s.h * s.w;
      Map<T> yg(y + (n * s.k + g * kg) * p, kg, p);
      if (!s.is_pointwise()) im2col(s, xg, col, p);
      CMap<T> cm(s.is_pointwise() ? xg : col, crs, p);
      CMap<T> wg(w + g * kg * crs, kg, crs);
      if (bias) {
        for (int64_t k = 0; k < kg; ++k) yg.row(k).setConstant(bias[g * kg + k]);
        product_rows(yg, wg, cm, /*accumulate=*/true);
      } else {
        product_rows(yg, wg, cm);
      }
    }
  });
}

template <typename T>
void bwd_data(const ConvShape& s, const T* dy, const T* w, T* dx, T* ws, size_t ws_bytes) {
  const int64_t cg = s.cg(), kg = s.kg(), crs = cg * s.r * s.s, p = s.oh * s.ow;
  const int64_t nw = workers_within(s, ConvDirection::backward_data, ws_bytes, sizeof(T));
  const int64_t ce = worker_elems(s);
  if (images_per_gemm(s) > 1) return bwd_data_batched(s, dy, w, dx, ws, nw);
  for_images(s, nw, [&](int64_t n, int64_t wk) {
    T* col = ws + wk * ce;
    for (int64_t g = 0; g < s.groups; ++g) {
      T* dxg = dx + (n * s.c + g * cg) * s.h * s.w;
      CMap<T> dyg(dy + (n * s.k + g * kg) * p, kg, p);
      CMap<T> wg(w + g * kg * crs, kg, crs);
      if (s.is_pointwise()) {
        product_rows(Map<T>(dxg, crs, p), wg.transpose(), dyg);
        continue;
      }
      product_rows(Map<T>(col, crs, p), wg.transpose(), dyg);
      std::fill(dxg, dxg + cg * s.h * s.w, T(0));
      col2im_add(s, col, dxg, p);
    }
  });
}

template <typename T>
void bwd_filter(const ConvShape& s, const T* dy, const T* x, T* dw, T* ws, size_t ws_bytes) {
  const int64_t cg = s.cg(), kg = s.kg(), crs = cg * s.r * s.s, p = s.oh * s.ow;
  const int64_t nw = workers_within(s, ConvDirection::backward_filter, ws_bytes, sizeof(T));
  const int64_t ce = worker_elems(s), wn = s.w_numel();
  // One worker accumulates straight into dw; several each own a partial sum after the columns.
  T* partial = ws + nw * ce;
  if (images_per_gemm(s) > 1) {
    bwd_filter_batched(s, dy, x, nw == 1 ? dw : partial, ws, nw);
  } else {
    for_images(s, nw, [&](int64_t n, int64_t wk) {
      T* col = ws + wk * ce;
      T* acc = nw == 1 ? dw : partial + wk * wn;
      if (n == s.n * wk / nw) std::fill(acc, acc + wn, T(0));
      for (int64_t g = 0; g < s.groups; ++g) {
        const T* xg = x + (n * s.c + g * cg) * s.h * s.w;
        if (!s.is_pointwise()) im2col(s, xg, col, p);
        CMap<T> cm(s.is_pointwise() ? xg : col, crs, p);
        CMap<T> dyg(dy + (n * s.k + g * kg) * p, kg, p);
        product_rows(Map<T>(acc + g * kg * crs, kg, crs), dyg, cm.transpose(), /*accumulate=*/true);
      }
    });
  }
  if (s.n == 0) std::fill(dw, dw + wn, T(0));
  if (nw == 1) return;
  parallel_range(wn, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) {
      T v = 0;
      for (int64_t wk = 0; wk < nw; ++wk) v += partial[wk * wn + i];
      dw[i] = v;
    }
  });
}

}  // namespace

size_t conv2d_im2col_workspace_bytes(DType t, const ConvShape& s, ConvDirection pass) {
  return static_cast<size_t>(workspace_elems(s, pass, workers(s))) * itemsize(t);
}

void conv2d_fwd_im2col(DType t, const ConvShape& s, const void* x, const void* w, const void* bias,
                       void* y, void* workspace, size_t workspace_bytes) {
  dispatch_float(t, "conv2d", [&](auto z) {
    using T = decltype(z);
    fwd(s, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
        static_cast<T*>(y), static_cast<T*>(workspace), workspace_bytes);
  });
}

void conv2d_bwd_data_im2col(DType t, const ConvShape& s, const void* dy, const void* w, void* dx,
                            void* workspace, size_t workspace_bytes) {
  dispatch_float(t, "conv2d_backward_data", [&](auto z) {
    using T = decltype(z);
    bwd_data(s, static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx),
             static_cast<T*>(workspace), workspace_bytes);
  });
}

void conv2d_bwd_filter_im2col(DType t, const ConvShape& s, const void* dy, const void* x, void* dw,
                              void* workspace, size_t workspace_bytes) {
  dispatch_float(t, "conv2d_backward_filter", [&](auto z) {
    using T = decltype(z);
    bwd_filter(s, static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dw),
               static_cast<T*>(workspace), workspace_bytes);
  });
}

}  // namespace ember::kernels::cpu

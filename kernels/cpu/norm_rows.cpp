// Row normalisation on the cpu (layer_norm, group_norm, instance_norm; kernels/norm_rows_shape.h):
// OpenMP over rows; each row's sums in double in sixteen independent accumulators (four AVX2
// vectors, enough to hide the adds' latency), combined in a fixed order, so the inner loops
// vectorise and the result does not depend on the thread count. Layer norm's weight gradients
// are summed per block of rows, a few rows at a time while they are in L1, group and instance
// norm's per row and channel, and both are then added in a fixed order.
#include "kernels/kernel_table.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

constexpr int kLanes = 16;

// The statistics' type: float64 for float64 data, float32 otherwise.
template <typename T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
double to_double(T v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}

// sum_j f(j) over [0, n) in kLanes interleaved double accumulators, added in lane order.
template <typename F>
double lane_sum(int64_t n, F&& f) {
  double acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += f(j + k);
  for (; j < n; ++j) acc[j % kLanes] += f(j);
  double s = 0;
  for (int k = 0; k < kLanes; ++k) s += acc[k];
  return s;
}

// sum_j dy[j] and sum_j dy[j] x[j] over n elements, each in kLanes double accumulators added in
// lane order, in one pass.
// float32 takes vectors of eight doubles: written as the loop below, GCC kept the 32 scalar
// accumulators on the stack and added one element at a time (group norm's backward took 1.4x
// PyTorch's time on a Xeon). The lanes and their order are the same.
template <typename T>
std::pair<double, double> channel_sums(int64_t n, const T* __restrict x, const T* __restrict dy) {
  double sg[kLanes] = {}, sgx[kLanes] = {};
  int64_t j = 0;
  if constexpr (std::is_same_v<T, float>) {
    static_assert(kLanes == 16, "two vectors of eight lanes");
    typedef float F8 __attribute__((vector_size(32), aligned(4)));
    typedef double D8 __attribute__((vector_size(64)));
    auto at = [](const float* p) {
      return __builtin_convertvector(*reinterpret_cast<const F8*>(p), D8);
    };
    D8 g0{}, g1{}, gx0{}, gx1{};
    for (; j + kLanes <= n; j += kLanes) {
      const D8 a0 = at(dy + j), a1 = at(dy + j + 8);
      g0 += a0;
      g1 += a1;
      gx0 += a0 * at(x + j);
      gx1 += a1 * at(x + j + 8);
    }
    for (int k = 0; k < 8; ++k) {
      sg[k] = g0[k], sg[k + 8] = g1[k];
      sgx[k] = gx0[k], sgx[k + 8] = gx1[k];
    }
  } else {
    for (; j + kLanes <= n; j += kLanes)
      for (int k = 0; k < kLanes; ++k) {
        const double g = to_double(dy[j + k]);
        sg[k] += g;
        sgx[k] += g * to_double(x[j + k]);
      }
  }
  for (; j < n; ++j) {
    const double g = to_double(dy[j]);
    sg[j % kLanes] += g;
    sgx[j % kLanes] += g * to_double(x[j]);
  }
  double a = 0, b = 0;
  for (int k = 0; k < kLanes; ++k) a += sg[k], b += sgx[k];
  return {a, b};
}

// Runs body(r) for every row, in parallel when the data are large.
template <typename F>
void for_rows(const NormRowsShape& s, F&& body) {
#pragma omp parallel for schedule(static) if (s.rows * s.len >= kParallelGrain && s.rows > 1 && \
                                              !omp_in_parallel())
  for (int64_t r = 0; r < s.rows; ++r) body(r);
}

template <typename T>
void fwd(const NormRowsShape& s, const T* x, const T* w, const T* b, T* y, stat_t<T>* mean_out,
         stat_t<T>* rstd_out) {
  using C = compute_t<T>;
  const int64_t len = s.len, inner = s.inner, cpr = s.channels_per_row();
  const bool stream = streams(s.rows * len * static_cast<int64_t>(sizeof(T)));
  for_rows(s, [&](int64_t r) {
    const T* xr = x + r * len;
    T* yr = y + r * len;
    const double mean = lane_sum(len, [&](int64_t j) { return to_double(xr[j]); }) / len;
    const double var = lane_sum(len,
                                [&](int64_t j) {
                                  const double d = to_double(xr[j]) - mean;
                                  return d * d;
                                }) /
                       len;
    const double rstd = 1.0 / std::sqrt(var + s.eps);
    mean_out[r] = static_cast<stat_t<T>>(mean);
    rstd_out[r] = static_cast<stat_t<T>>(rstd);
    if (s.groups == 1 && inner == 1) {  // a weight per element (layer norm)
      const C m = static_cast<C>(mean), rs = static_cast<C>(rstd);
      write_row(yr, len, stream, [&](auto load) {
        const auto v = (load(xr) - m) * rs;
        return (w ? v * load(w) : v) + (b ? load(b) : decltype(v){});
      });
      if (stream) stream_fence();
      return;
    }
    // y = (x - mean) * scale + shift per channel: x - mean first, as rstd may be large (a tiny
    // variance) and x * scale - mean * scale would lose the difference.
    const int64_t ch0 = (r % s.groups) * cpr;
    const C m = static_cast<C>(mean);
    for (int64_t c = 0; c < cpr; ++c) {
      const C scale = static_cast<C>(rstd * (w ? to_double(w[ch0 + c]) : 1.0));
      const C shift = b ? static_cast<C>(b[ch0 + c]) : C(0);
      const T* xc = xr + c * inner;
      write_row(yr + c * inner, inner, stream,
                [&](auto load) { return (load(xc) - m) * scale + shift; });
    }
    if (stream) stream_fence();
  });
}

// Layer norm's weight gradients are summed per block of rows, the rows cut into a number of
// blocks fixed by the shape alone, so the sums' order does not depend on the thread count.
constexpr int64_t kRowBlocks = 32;

// Layer norm's dx for one row: rs (dy w - ma - xhat mb), xhat = (x - m) rs.
template <typename T, typename C>
void dx_row(int64_t len, const T* xr, const T* gr, const C* wc, C m, C rs, C ma, C mb, T* dr,
            bool stream) {
  write_row(dr, len, stream, [&](auto load) {
    const auto xhat = (load(xr) - m) * rs;
    return rs * (load(gr) * load(wc) - ma - xhat * mb);
  });
}

// Layer norm's weight gradients are added up a few rows at a time: each element's terms of the
// group's rows summed in C, then added once to the block's double partial sums pw, pb (a
// quarter of the conversions, loads and stores of double that one row at a time took, most of
// the weight gradients' cost). The rows are the last ones the backward read: still in L1.
constexpr int64_t kGroupRows = 4;

// pw[q] += sum over the n rows i of dy[i][q] xhat[i][q], pb[q] += sum of dy[i][q], rows of len
// elements from x and dy, xhat = (x - m[i]) rs[i]. The buffers never overlap (restrict: the
// loop vectorises).
template <int N, typename T, typename C>
void add_weight_grads(int64_t len, const T* __restrict x, const T* __restrict dy, const C* m,
                      const C* rs, double* __restrict pw, double* __restrict pb) {
  for (int64_t q = 0; q < len; ++q) {
    C tw = 0, tb = 0;
    for (int i = 0; i < N; ++i) {
      const C g = static_cast<C>(dy[i * len + q]);
      tw += g * ((static_cast<C>(x[i * len + q]) - m[i]) * rs[i]);
      tb += g;
    }
    pw[q] += static_cast<double>(tw);
    pb[q] += static_cast<double>(tb);
  }
}

template <typename T, typename C>
void add_weight_grads(int64_t n, int64_t len, const T* x, const T* dy, const C* m, const C* rs,
                      double* pw, double* pb) {
  static_assert(kGroupRows == 4, "one instance per group size below");
  switch (n) {
    case 4:
      return add_weight_grads<4>(len, x, dy, m, rs, pw, pb);
    case 3:
      return add_weight_grads<3>(len, x, dy, m, rs, pw, pb);
    case 2:
      return add_weight_grads<2>(len, x, dy, m, rs, pw, pb);
    default:
      return add_weight_grads<1>(len, x, dy, m, rs, pw, pb);
  }
}

// Layer norm's backward (groups == 1, inner == 1) in one pass over x and dy: per row its two
// sums, then dx; per group of kGroupRows rows (in L1 by then) their terms of dweight and dbias
// into the block's partial sums; the blocks' partials are added in block order at the end.
template <typename T>
void bwd_per_element(const NormRowsShape& s, const T* x, const T* dy, const T* w,
                     const stat_t<T>* mean, const stat_t<T>* rstd, T* dx, T* dw, T* db) {
  using C = compute_t<T>;
  const int64_t len = s.len, rows = s.rows;
  if (rows == 0 || len == 0) return;
  const bool want_w = dw || db;
  const bool stream = dx != nullptr && streams(rows * len * static_cast<int64_t>(sizeof(T)));
  std::vector<C> wc(static_cast<size_t>(len), C(1));  // the weight in C, or ones
  if (w)
    for (int64_t j = 0; j < len; ++j) wc[j] = static_cast<C>(w[j]);
  const int64_t blocks = std::min<int64_t>(rows, kRowBlocks), per = (rows + blocks - 1) / blocks;
  std::vector<double> part(want_w ? static_cast<size_t>(blocks * len * 2) : 0);
#pragma omp parallel for schedule(static) if (rows * len >= kParallelGrain && blocks > 1 && \
                                              !omp_in_parallel())
  for (int64_t blk = 0; blk < blocks; ++blk) {
    double* pw = want_w ? part.data() + blk * len * 2 : nullptr;
    double* pb = want_w ? pw + len : nullptr;
    const int64_t end = std::min(rows, (blk + 1) * per);
    for (int64_t r0 = blk * per; r0 < end; r0 += kGroupRows) {
      const int64_t n = std::min(kGroupRows, end - r0);
      C ms[kGroupRows], rss[kGroupRows];
      for (int64_t r = r0; r < r0 + n; ++r) {
        const T *xr = x + r * len, *gr = dy + r * len;
        const C m = static_cast<C>(mean[r]), rs = static_cast<C>(rstd[r]);
        ms[r - r0] = m;
        rss[r - r0] = rs;
        if (!dx) continue;
        double sa[kLanes] = {}, sb[kLanes] = {};
        int64_t j = 0;
        for (; j + kLanes <= len; j += kLanes)
          for (int k = 0; k < kLanes; ++k) {
            const C gw = static_cast<C>(gr[j + k]) * wc[j + k];
            const C xhat = (static_cast<C>(xr[j + k]) - m) * rs;
            sa[k] += static_cast<double>(gw);
            sb[k] += static_cast<double>(gw) * static_cast<double>(xhat);
          }
        for (; j < len; ++j) {
          const C gw = static_cast<C>(gr[j]) * wc[j];
          sa[j % kLanes] += static_cast<double>(gw);
          sb[j % kLanes] +=
              static_cast<double>(gw) * static_cast<double>((static_cast<C>(xr[j]) - m) * rs);
        }
        double a = 0, bsum = 0;
        for (int k = 0; k < kLanes; ++k) a += sa[k], bsum += sb[k];
        const C ma = static_cast<C>(a / len), mb = static_cast<C>(bsum / len);
        dx_row(len, xr, gr, wc.data(), m, rs, ma, mb, dx + r * len, stream);
      }
      if (want_w) add_weight_grads(n, len, x + r0 * len, dy + r0 * len, ms, rss, pw, pb);
    }
    if (stream) stream_fence();
  }
  if (!want_w) return;
  parallel_range(len, [&](int64_t lo, int64_t n) {
    for (int64_t q = lo; q < lo + n; ++q) {
      double gw = 0, gb = 0;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        gw += part[(blk * 2) * len + q];
        gb += part[(blk * 2 + 1) * len + q];
      }
      if (dw) dw[q] = static_cast<T>(gw);
      if (db) db[q] = static_cast<T>(gb);
    }
  });
}

// Group and instance norm's backward (a channel covers `inner` consecutive elements): per row and
// channel the sums of dy and dy * x, from which both dx and the weight gradients follow.
template <typename T>
void bwd_per_channel(const NormRowsShape& s, const T* x, const T* dy, const T* w,
                     const stat_t<T>* mean, const stat_t<T>* rstd, T* dx, T* dw, T* db) {
  using C = compute_t<T>;
  const int64_t len = s.len, inner = s.inner, cpr = s.channels_per_row();
  // part[(r * cpr + c) * 2 + {0, 1}]: sum of dy, sum of dy * xhat over channel c of row r.
  std::vector<double> part(static_cast<size_t>(s.rows * cpr * 2));
  const bool stream = dx != nullptr && streams(s.rows * len * static_cast<int64_t>(sizeof(T)));
  for_rows(s, [&](int64_t r) {
    const double m = static_cast<double>(mean[r]), rs = static_cast<double>(rstd[r]);
    const int64_t ch0 = (r % s.groups) * cpr;
    double a = 0, bsum = 0;
    for (int64_t c = 0; c < cpr; ++c) {
      const T *xc = x + r * len + c * inner, *gc = dy + r * len + c * inner;
      const auto [g, gx] = channel_sums(inner, xc, gc);
      const double gxhat = (gx - m * g) * rs;
      part[(r * cpr + c) * 2] = g;
      part[(r * cpr + c) * 2 + 1] = gxhat;
      const double wc = w ? to_double(w[ch0 + c]) : 1.0;
      a += wc * g;
      bsum += wc * gxhat;
    }
    if (!dx) return;
    // dx = rstd * (w dy - a / len - xhat * b / len), in this grouping: with a single element per
    // row (or a tiny variance) rstd is large, and w dy - a / len must cancel exactly.
    const C rsc = static_cast<C>(rs), m_c = static_cast<C>(m);
    const C ma = static_cast<C>(a / len), mb = static_cast<C>(bsum / len);
    for (int64_t c = 0; c < cpr; ++c) {
      const C wc = w ? static_cast<C>(w[ch0 + c]) : C(1);
      const T *xc = x + r * len + c * inner, *gc = dy + r * len + c * inner;
      write_row(dx + r * len + c * inner, inner, stream, [&](auto load) {
        const auto xhat = (load(xc) - m_c) * rsc;
        return rsc * (load(gc) * wc - ma - xhat * mb);
      });
    }
    if (stream) stream_fence();
  });
  if (!dw && !db) return;
  const int64_t per_group = s.rows / s.groups;
  for (int64_t ch = 0; ch < s.channels(); ++ch) {  // rows of the channel in order
    const int64_t gi = ch / cpr, c = ch % cpr;
    double g = 0, gx = 0;
    for (int64_t n = 0; n < per_group; ++n) {
      const int64_t r = n * s.groups + gi;
      g += part[(r * cpr + c) * 2];
      gx += part[(r * cpr + c) * 2 + 1];
    }
    if (dw) dw[ch] = static_cast<T>(gx);
    if (db) db[ch] = static_cast<T>(g);
  }
}

}  // namespace

void norm_rows_fwd(DType t, const NormRowsShape& s, const void* x, const void* weight,
                   const void* bias, void* y, void* mean, void* rstd, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "norm_rows", [&] {
    using T = scalar_t;
    fwd<T>(s, static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias),
           static_cast<T*>(y), static_cast<stat_t<T>*>(mean), static_cast<stat_t<T>*>(rstd));
  });
}

size_t norm_rows_bwd_workspace_bytes(const NormRowsShape&) {
  return 0;
}

void norm_rows_bwd(DType t, const NormRowsShape& s, const void* x, const void* dy,
                   const void* weight, const void* mean, const void* rstd, void* dx, void* dweight,
                   void* dbias, double*, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "norm_rows_backward", [&] {
    using T = scalar_t;
    auto* run = s.groups == 1 && s.inner == 1 ? &bwd_per_element<T> : &bwd_per_channel<T>;
    run(s, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<const T*>(weight),
        static_cast<const stat_t<T>*>(mean), static_cast<const stat_t<T>*>(rstd),
        static_cast<T*>(dx), static_cast<T*>(dweight), static_cast<T*>(dbias));
  });
}

}  // namespace ember::kernels::cpu

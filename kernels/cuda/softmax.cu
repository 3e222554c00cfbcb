// softmax / log_softmax: three passes over each row (max, sum of exp, write), all reading the
// row where one warp or one block holds it; along an inner dim, one thread per column walks the
// dim with stride `inner`, so neighbouring threads read neighbouring addresses and no
// transposing copy is needed.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/row_reduce.cuh"
#include "kernels/kernel_table.h"

#include <cmath>
#include <stdexcept>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

// A row of only -inf has max -inf; 0 avoids inf - inf (the CPU kernels do the same).
template <typename T>
__device__ __forceinline__ T finite_max(T m) {
  return m == T(-INFINITY) ? T(0) : m;
}

// T is the stored type, C = compute_t<T> the one computed in (float for the half types, which
// round once, on store).
template <typename T, bool kWarp>
__global__ void softmax_fwd_rows_kernel(int64_t rows, int64_t d, bool log, const T* __restrict__ x,
                                        T* __restrict__ y) {
  using L = RowLayout<kWarp>;
  using C = compute_t<T>;
  for (int64_t r = L::first_row(); r < rows; r += L::row_step()) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    C m = C(-INFINITY);
    for (int64_t i = L::lane(); i < d; i += L::width()) m = MaxOp()(m, C(xr[i]));
    m = finite_max(row_reduce<kWarp>(m, MaxOp()));
    double s = 0;
    for (int64_t i = L::lane(); i < d; i += L::width()) s += static_cast<double>(exp(C(xr[i]) - m));
    s = row_reduce<kWarp>(s, SumOp());
    if (log) {
      const C lse = static_cast<C>(static_cast<double>(m) + ::log(s));
      for (int64_t i = L::lane(); i < d; i += L::width()) yr[i] = narrow<T>(C(xr[i]) - lse);
    } else {
      const C inv = static_cast<C>(1.0 / s);
      for (int64_t i = L::lane(); i < d; i += L::width())
        yr[i] = narrow<T>(exp(C(xr[i]) - m) * inv);
    }
  }
}

template <typename T, bool kWarp>
__global__ void softmax_bwd_rows_kernel(int64_t rows, int64_t d, bool log, const T* __restrict__ y,
                                        const T* __restrict__ dy, T* __restrict__ dx) {
  using L = RowLayout<kWarp>;
  using C = compute_t<T>;
  for (int64_t r = L::first_row(); r < rows; r += L::row_step()) {
    const T *yr = y + r * d, *gr = dy + r * d;
    T* dr = dx + r * d;
    double s = 0;
    for (int64_t i = L::lane(); i < d; i += L::width())
      s += log ? static_cast<double>(C(gr[i])) : static_cast<double>(C(gr[i])) * C(yr[i]);
    const C ts = static_cast<C>(row_reduce<kWarp>(s, SumOp()));
    for (int64_t i = L::lane(); i < d; i += L::width()) {
      const C yv = C(yr[i]), gv = C(gr[i]);
      dr[i] = narrow<T>(log ? gv - exp(yv) * ts : yv * (gv - ts));
    }
  }
}

// One thread per (outer, inner) column; element k of column (o, j) is at (o * d + k) * inner + j.
template <typename T>
__global__ void softmax_fwd_cols_kernel(SoftmaxShape s, bool log, const T* __restrict__ x,
                                        T* __restrict__ y) {
  using C = compute_t<T>;
  const int64_t d = s.dim, st = s.inner, cols = s.outer * s.inner;
  for (int64_t c = global_thread(); c < cols; c += grid_threads()) {
    const int64_t base = (c / st) * d * st + c % st;
    const T* xc = x + base;
    T* yc = y + base;
    C m = C(-INFINITY);
    for (int64_t k = 0; k < d; ++k) m = MaxOp()(m, C(xc[k * st]));
    m = finite_max(m);
    double sum = 0;
    for (int64_t k = 0; k < d; ++k) sum += static_cast<double>(exp(C(xc[k * st]) - m));
    if (log) {
      const C lse = static_cast<C>(static_cast<double>(m) + ::log(sum));
      for (int64_t k = 0; k < d; ++k) yc[k * st] = narrow<T>(C(xc[k * st]) - lse);
    } else {
      const C inv = static_cast<C>(1.0 / sum);
      for (int64_t k = 0; k < d; ++k) yc[k * st] = narrow<T>(exp(C(xc[k * st]) - m) * inv);
    }
  }
}

template <typename T>
__global__ void softmax_bwd_cols_kernel(SoftmaxShape s, bool log, const T* __restrict__ y,
                                        const T* __restrict__ dy, T* __restrict__ dx) {
  using C = compute_t<T>;
  const int64_t d = s.dim, st = s.inner, cols = s.outer * s.inner;
  for (int64_t c = global_thread(); c < cols; c += grid_threads()) {
    const int64_t base = (c / st) * d * st + c % st;
    const T *yc = y + base, *gc = dy + base;
    T* dc = dx + base;
    double sum = 0;
    for (int64_t k = 0; k < d; ++k)
      sum += log ? static_cast<double>(C(gc[k * st]))
                 : static_cast<double>(C(gc[k * st])) * C(yc[k * st]);
    const C ts = static_cast<C>(sum);
    for (int64_t k = 0; k < d; ++k) {
      const C yv = C(yc[k * st]), gv = C(gc[k * st]);
      dc[k * st] = narrow<T>(log ? gv - exp(yv) * ts : yv * (gv - ts));
    }
  }
}

template <typename T>
void fwd(const SoftmaxShape& s, bool log, const T* x, T* y, gpu::Stream stream) {
  if (s.inner > 1) {
    EMBER_LAUNCH(softmax_fwd_cols_kernel<T>, dim3(blocks_for(s.outer * s.inner)), dim3(kBlock), 0,
                 stream, s, log, x, y);
  } else if (s.dim <= kWarpRowMax) {
    auto* k = &softmax_fwd_rows_kernel<T, true>;
    EMBER_LAUNCH(k, dim3(row_blocks(s.outer, true)), dim3(kRowBlock), 0, stream, s.outer, s.dim,
                 log, x, y);
  } else {
    auto* k = &softmax_fwd_rows_kernel<T, false>;
    EMBER_LAUNCH(k, dim3(row_blocks(s.outer, false)), dim3(kRowBlock), 0, stream, s.outer, s.dim,
                 log, x, y);
  }
}

template <typename T>
void bwd(const SoftmaxShape& s, bool log, const T* y, const T* dy, T* dx, gpu::Stream stream) {
  if (s.inner > 1) {
    EMBER_LAUNCH(softmax_bwd_cols_kernel<T>, dim3(blocks_for(s.outer * s.inner)), dim3(kBlock), 0,
                 stream, s, log, y, dy, dx);
  } else if (s.dim <= kWarpRowMax) {
    auto* k = &softmax_bwd_rows_kernel<T, true>;
    EMBER_LAUNCH(k, dim3(row_blocks(s.outer, true)), dim3(kRowBlock), 0, stream, s.outer, s.dim,
                 log, y, dy, dx);
  } else {
    auto* k = &softmax_bwd_rows_kernel<T, false>;
    EMBER_LAUNCH(k, dim3(row_blocks(s.outer, false)), dim3(kRowBlock), 0, stream, s.outer, s.dim,
                 log, y, dy, dx);
  }
}

bool empty(const SoftmaxShape& s) {
  return s.outer * s.dim * s.inner == 0;
}

}  // namespace

void softmax_fwd(DType t, const SoftmaxShape& dims, bool log, const void* x, void* y,
                 gpu::Stream stream) {
  if (empty(dims)) return;
  dispatch_float_half(t, "softmax_fwd", [&](auto zero) {
    using T = decltype(zero);
    fwd(dims, log, static_cast<const T*>(x), static_cast<T*>(y), stream);
  });
}

void softmax_bwd(DType t, const SoftmaxShape& dims, bool log, const void* y, const void* dy,
                 void* dx, gpu::Stream stream) {
  if (empty(dims)) return;
  dispatch_float_half(t, "softmax_bwd", [&](auto zero) {
    using T = decltype(zero);
    bwd(dims, log, static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx),
        stream);
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

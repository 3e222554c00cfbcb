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

template <typename T, bool kWarp>
__global__ void softmax_fwd_rows_kernel(int64_t rows, int64_t d, bool log, const T* __restrict__ x,
                                        T* __restrict__ y) {
  using L = RowLayout<kWarp>;
  for (int64_t r = L::first_row(); r < rows; r += L::row_step()) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    T m = T(-INFINITY);
    for (int64_t i = L::lane(); i < d; i += L::width()) m = MaxOp()(m, xr[i]);
    m = finite_max(row_reduce<kWarp>(m, MaxOp()));
    double s = 0;
    for (int64_t i = L::lane(); i < d; i += L::width()) s += static_cast<double>(exp(xr[i] - m));
    s = row_reduce<kWarp>(s, SumOp());
    if (log) {
      const T lse = static_cast<T>(static_cast<double>(m) + ::log(s));
      for (int64_t i = L::lane(); i < d; i += L::width()) yr[i] = xr[i] - lse;
    } else {
      const T inv = static_cast<T>(1.0 / s);
      for (int64_t i = L::lane(); i < d; i += L::width())
        yr[i] = static_cast<T>(exp(xr[i] - m)) * inv;
    }
  }
}

template <typename T, bool kWarp>
__global__ void softmax_bwd_rows_kernel(int64_t rows, int64_t d, bool log, const T* __restrict__ y,
                                        const T* __restrict__ dy, T* __restrict__ dx) {
  using L = RowLayout<kWarp>;
  for (int64_t r = L::first_row(); r < rows; r += L::row_step()) {
    const T *yr = y + r * d, *gr = dy + r * d;
    T* dr = dx + r * d;
    double s = 0;
    for (int64_t i = L::lane(); i < d; i += L::width())
      s += log ? static_cast<double>(gr[i]) : static_cast<double>(gr[i]) * yr[i];
    const T ts = static_cast<T>(row_reduce<kWarp>(s, SumOp()));
    for (int64_t i = L::lane(); i < d; i += L::width())
      dr[i] = log ? gr[i] - exp(yr[i]) * ts : yr[i] * (gr[i] - ts);
  }
}

// One thread per (outer, inner) column; element k of column (o, j) is at (o * d + k) * inner + j.
template <typename T>
__global__ void softmax_fwd_cols_kernel(SoftmaxShape s, bool log, const T* __restrict__ x,
                                        T* __restrict__ y) {
  const int64_t d = s.dim, st = s.inner, cols = s.outer * s.inner;
  for (int64_t c = global_thread(); c < cols; c += grid_threads()) {
    const int64_t base = (c / st) * d * st + c % st;
    const T* xc = x + base;
    T* yc = y + base;
    T m = T(-INFINITY);
    for (int64_t k = 0; k < d; ++k) m = MaxOp()(m, xc[k * st]);
    m = finite_max(m);
    double sum = 0;
    for (int64_t k = 0; k < d; ++k) sum += static_cast<double>(exp(xc[k * st] - m));
    if (log) {
      const T lse = static_cast<T>(static_cast<double>(m) + ::log(sum));
      for (int64_t k = 0; k < d; ++k) yc[k * st] = xc[k * st] - lse;
    } else {
      const T inv = static_cast<T>(1.0 / sum);
      for (int64_t k = 0; k < d; ++k) yc[k * st] = static_cast<T>(exp(xc[k * st] - m)) * inv;
    }
  }
}

template <typename T>
__global__ void softmax_bwd_cols_kernel(SoftmaxShape s, bool log, const T* __restrict__ y,
                                        const T* __restrict__ dy, T* __restrict__ dx) {
  const int64_t d = s.dim, st = s.inner, cols = s.outer * s.inner;
  for (int64_t c = global_thread(); c < cols; c += grid_threads()) {
    const int64_t base = (c / st) * d * st + c % st;
    const T *yc = y + base, *gc = dy + base;
    T* dc = dx + base;
    double sum = 0;
    for (int64_t k = 0; k < d; ++k)
      sum += log ? static_cast<double>(gc[k * st]) : static_cast<double>(gc[k * st]) * yc[k * st];
    const T ts = static_cast<T>(sum);
    for (int64_t k = 0; k < d; ++k) {
      const int64_t e = k * st;
      dc[e] = log ? gc[e] - exp(yc[e]) * ts : yc[e] * (gc[e] - ts);
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
  if (t == DType::f32)
    return fwd(dims, log, static_cast<const float*>(x), static_cast<float*>(y), stream);
  if (t == DType::f64)
    return fwd(dims, log, static_cast<const double*>(x), static_cast<double*>(y), stream);
  throw std::invalid_argument("softmax_fwd: kernels exist for float32 and float64 only");
}

void softmax_bwd(DType t, const SoftmaxShape& dims, bool log, const void* y, const void* dy,
                 void* dx, gpu::Stream stream) {
  if (empty(dims)) return;
  if (t == DType::f32)
    return bwd(dims, log, static_cast<const float*>(y), static_cast<const float*>(dy),
               static_cast<float*>(dx), stream);
  if (t == DType::f64)
    return bwd(dims, log, static_cast<const double*>(y), static_cast<const double*>(dy),
               static_cast<double*>(dx), stream);
  throw std::invalid_argument("softmax_bwd: kernels exist for float32 and float64 only");
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

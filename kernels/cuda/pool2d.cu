// 2-D pooling: one thread per output element for the forwards; one thread per input element for
// the backwards, which gather the gradients that reach it instead of scattering with atomics,
// so every result is written once, in a fixed order (the CPU's). The value of each output and the
// windows are kernels/pool_math.h's, which the CPU kernels share.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"
#include "kernels/pool_math.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;
using pool_detail::max64;
using pool_detail::min64;

// Note [32-bit pooling positions]: a GPU has no 64-bit integer divide or multiply instruction;
// each is a sequence of 32-bit ones (a divide, dozens). The max pooling forward computes a few
// per output (its plane, row and column, then each tap's position), so where every position of
// the input, the output and the grid's stride fits in 31 bits (I = int32_t; max_pool2d_fwd
// checks), it computes them in 32 bits.
template <typename T, typename I>
__global__ void max_pool2d_fwd_kernel(PoolShape s, const T* __restrict__ x, T* __restrict__ y,
                                      int64_t* __restrict__ idx) {
  const I ow = I(s.ow), oh = I(s.oh), plane = I(s.h * s.w);
  const I total = I(s.n * s.c) * oh * ow;
  for (I o = I(global_thread()); o < total; o += I(grid_threads())) {
    const I q = o / ow, j = o - q * ow, p = q / oh, i = q - p * oh;
    const PoolMax<compute_t<T>> m = max_pool_at<T, compute_t<T>, I>(s, x + p * plane, i, j);
    y[o] = narrow<T>(m.value);
    idx[o] = m.index;
  }
}

// A range of index rows or columns; empty is [INT64_MAX, INT64_MIN].
struct Range {
  int64_t lo, hi;
};
// The union of two ranges (block_reduce: Note [block_reduce order]).
struct RangeUnionOp {
  __device__ Range operator()(Range a, Range b) const {
    return {min64(a.lo, b.lo), max64(a.hi, b.hi)};
  }
};

// Workspace of max_pool2d_bwd (max_pool2d_bwd_workspace_bytes): the range of index rows
// (columns) seen at each output row (column), and the range of output rows (columns) to visit
// per input row (column).
struct MaxBwdWorkspace {
  int64_t *row_lo, *row_hi, *col_lo, *col_hi;        // per output row / column: index rows / cols
  int64_t *first_oi, *last_oi, *first_oj, *last_oj;  // per input row / column: outputs to visit
};

MaxBwdWorkspace split_workspace(const PoolShape& s, int64_t* ws) {
  MaxBwdWorkspace w;
  w.row_lo = ws, w.row_hi = ws + s.oh, ws += 2 * s.oh;
  w.col_lo = ws, w.col_hi = ws + s.ow, ws += 2 * s.ow;
  w.first_oi = ws, w.last_oi = ws + s.h, ws += 2 * s.h;
  w.first_oj = ws, w.last_oj = ws + s.w;
  return w;
}

// Block b < oh: the range of input rows the indices of output row b point at, over every plane
// and column; block oh + j: the same for the columns of output column j. Empty: [max, min).
__global__ void max_pool2d_bwd_ranges_kernel(PoolShape s, const int64_t* __restrict__ idx,
                                             MaxBwdWorkspace w) {
  const int64_t hw = s.h * s.w;
  for (int64_t b = blockIdx.x; b < s.oh + s.ow; b += gridDim.x) {
    const bool row = b < s.oh;
    const int64_t line = row ? b : b - s.oh, across = row ? s.ow : s.oh;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t e = threadIdx.x; e < (s.n * s.c) * across; e += blockDim.x) {
      const int64_t p = e / across, k = e % across;
      const int64_t at = idx[(p * s.oh + (row ? line : k)) * s.ow + (row ? k : line)];
      if (at < 0 || at >= hw) continue;
      const int64_t v = row ? at / s.w : at % s.w;
      lo = min64(lo, v);
      hi = max64(hi, v);
    }
    const Range r = block_reduce(Range{lo, hi}, RangeUnionOp(), Range{INT64_MAX, INT64_MIN});
    if (threadIdx.x == 0) {
      (row ? w.row_lo : w.col_lo)[line] = r.lo;
      (row ? w.row_hi : w.col_hi)[line] = r.hi;
    }
  }
}

// For each input row (then column): the first and last output row (column) whose range holds it.
__global__ void max_pool2d_bwd_visit_kernel(PoolShape s, MaxBwdWorkspace w) {
  for (int64_t t = global_thread(); t < s.h + s.w; t += grid_threads()) {
    const bool row = t < s.h;
    const int64_t v = row ? t : t - s.h, outs = row ? s.oh : s.ow;
    const int64_t* lo = row ? w.row_lo : w.col_lo;
    const int64_t* hi = row ? w.row_hi : w.col_hi;
    int64_t first = outs, last = -1;
    for (int64_t o = 0; o < outs; ++o)
      if (lo[o] <= v && v <= hi[o]) first = min64(first, o), last = o;
    (row ? w.first_oi : w.first_oj)[v] = first;
    (row ? w.last_oi : w.last_oj)[v] = last;
  }
}

template <typename T>
__global__ void max_pool2d_bwd_kernel(PoolShape s, const T* __restrict__ dy,
                                      const int64_t* __restrict__ idx, T* __restrict__ dx,
                                      MaxBwdWorkspace w) {
  const int64_t total = (s.n * s.c) * s.h * s.w;
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const int64_t iw = e % s.w, ih = (e / s.w) % s.h, p = e / (s.w * s.h);
    const int64_t at = ih * s.w + iw;
    const int64_t j0 = w.first_oj[iw], j1 = w.last_oj[iw];
    compute_t<T> acc = 0;
    for (int64_t i = w.first_oi[ih]; i <= w.last_oi[ih]; ++i) {
      if (ih < w.row_lo[i] || ih > w.row_hi[i]) continue;
      const int64_t base = (p * s.oh + i) * s.ow;
      for (int64_t j = j0; j <= j1; ++j)
        if (idx[base + j] == at) acc += compute_t<T>(dy[base + j]);
    }
    dx[e] = narrow<T>(acc);
  }
}

template <typename T>
__global__ void avg_pool2d_fwd_kernel(PoolShape s, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t total = (s.n * s.c) * s.oh * s.ow;
  for (int64_t o = global_thread(); o < total; o += grid_threads()) {
    const int64_t j = o % s.ow, i = (o / s.ow) % s.oh, p = o / (s.ow * s.oh);
    y[o] = narrow<T>(avg_pool_at<T, compute_t<T>>(s, x + p * s.h * s.w, i, j));
  }
}

// The outputs whose window (unclipped start o*stride - pad, length k) holds input position v:
// o*stride - pad <= v < o*stride - pad + k.
__device__ __forceinline__ void avg_outputs(int64_t v, int64_t k, int64_t stride, int64_t pad,
                                            int64_t outs, int64_t& first, int64_t& last) {
  const int64_t num = v + pad - k;  // o > num / stride
  first = num < 0 ? 0 : num / stride + 1;
  last = min64((v + pad) / stride, outs - 1);
}

template <typename T>
__global__ void avg_pool2d_bwd_kernel(PoolShape s, const T* __restrict__ dy, T* __restrict__ dx) {
  const int64_t total = (s.n * s.c) * s.h * s.w;
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const int64_t iw = e % s.w, ih = (e / s.w) % s.h, p = e / (s.w * s.h);
    int64_t i0, i1, j0, j1;
    avg_outputs(ih, s.kh, s.sh, s.ph, s.oh, i0, i1);
    avg_outputs(iw, s.kw, s.sw, s.pw, s.ow, j0, j1);
    using C = compute_t<T>;
    C acc = C(0);
    for (int64_t i = i0; i <= i1; ++i)
      for (int64_t j = j0; j <= j1; ++j) {
        const AvgWindow wd = avg_window(s, i, j);
        if (ih < wd.h0 || ih >= wd.h1 || iw < wd.w0 || iw >= wd.w1) continue;
        acc += C(dy[(p * s.oh + i) * s.ow + j]) / static_cast<C>(wd.divisor);
      }
    dx[e] = narrow<T>(acc);
  }
}

template <typename T>
__global__ void adaptive_avg_pool2d_fwd_kernel(PoolShape s, const T* __restrict__ x,
                                               T* __restrict__ y) {
  const int64_t total = (s.n * s.c) * s.oh * s.ow;
  for (int64_t o = global_thread(); o < total; o += grid_threads()) {
    const int64_t j = o % s.ow, i = (o / s.ow) % s.oh, p = o / (s.ow * s.oh);
    y[o] = narrow<T>(adaptive_avg_pool_at<T, compute_t<T>>(s, x + p * s.h * s.w, i, j));
  }
}

template <typename T>
__global__ void adaptive_avg_pool2d_bwd_kernel(PoolShape s, const T* __restrict__ dy,
                                               T* __restrict__ dx) {
  const int64_t total = (s.n * s.c) * s.h * s.w;
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const int64_t iw = e % s.w, ih = (e / s.w) % s.h, p = e / (s.w * s.h);
    // Output rows with start <= ih < end lie in [floor(ih*OH/H), ceil((ih+1)*OH/H) - 1].
    const int64_t i0 = ih * s.oh / s.h, i1 = min64(((ih + 1) * s.oh + s.h - 1) / s.h - 1, s.oh - 1);
    const int64_t j0 = iw * s.ow / s.w, j1 = min64(((iw + 1) * s.ow + s.w - 1) / s.w - 1, s.ow - 1);
    using C = compute_t<T>;
    C acc = C(0);
    for (int64_t i = i0; i <= i1; ++i) {
      const int64_t h0 = adaptive_start(i, s.h, s.oh), h1 = adaptive_end(i, s.h, s.oh);
      if (ih < h0 || ih >= h1) continue;
      for (int64_t j = j0; j <= j1; ++j) {
        const int64_t w0 = adaptive_start(j, s.w, s.ow), w1 = adaptive_end(j, s.w, s.ow);
        if (iw < w0 || iw >= w1) continue;
        acc += C(dy[(p * s.oh + i) * s.ow + j]) / static_cast<C>((h1 - h0) * (w1 - w0));
      }
    }
    dx[e] = narrow<T>(acc);
  }
}

}  // namespace

size_t max_pool2d_bwd_workspace_bytes(const PoolShape& s) {
  return static_cast<size_t>(2 * (s.oh + s.ow + s.h + s.w)) * sizeof(int64_t);
}

void max_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y, int64_t* idx,
                    gpu::Stream stream) {
  dispatch_float_half(t, "max_pool2d", [&](auto z) {
    using T = decltype(z);
    const int64_t n = (s.n * s.c) * s.oh * s.ow;
    if (n == 0) return;
    const unsigned blocks = blocks_for(n);
    // Note [32-bit pooling positions]: the input's and output's positions, plus a grid stride.
    const int64_t reach = std::max(s.n * s.c * s.h * s.w, n) + int64_t{blocks} * kBlock;
    auto* kernel = reach <= std::numeric_limits<int32_t>::max() ? max_pool2d_fwd_kernel<T, int32_t>
                                                                : max_pool2d_fwd_kernel<T, int64_t>;
    EMBER_LAUNCH(kernel, dim3(blocks), dim3(kBlock), 0, stream, s, static_cast<const T*>(x),
                 static_cast<T*>(y), idx);
  });
}

void max_pool2d_bwd(DType t, const PoolShape& s, const void* dy, const int64_t* idx, void* dx,
                    int64_t* workspace, gpu::Stream stream) {
  dispatch_float_half(t, "max_pool2d_backward", [&](auto z) {
    using T = decltype(z);
    const int64_t n = (s.n * s.c) * s.h * s.w;
    if (n == 0) return;
    const MaxBwdWorkspace w = split_workspace(s, workspace);
    if (s.oh + s.ow > 0) {
      const int64_t lines = s.oh + s.ow;
      EMBER_LAUNCH(max_pool2d_bwd_ranges_kernel, dim3(blocks_for(lines, 1)), dim3(kBlock), 0,
                   stream, s, idx, w);
    }
    EMBER_LAUNCH(max_pool2d_bwd_visit_kernel, dim3(blocks_for(s.h + s.w)), dim3(kBlock), 0, stream,
                 s, w);
    EMBER_LAUNCH(max_pool2d_bwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s,
                 static_cast<const T*>(dy), idx, static_cast<T*>(dx), w);
  });
}

void avg_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y, gpu::Stream stream) {
  dispatch_float_half(t, "avg_pool2d", [&](auto z) {
    using T = decltype(z);
    const int64_t n = (s.n * s.c) * s.oh * s.ow;
    if (n == 0) return;
    EMBER_LAUNCH(avg_pool2d_fwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s,
                 static_cast<const T*>(x), static_cast<T*>(y));
  });
}

void avg_pool2d_bwd(DType t, const PoolShape& s, const void* dy, void* dx, gpu::Stream stream) {
  dispatch_float_half(t, "avg_pool2d_backward", [&](auto z) {
    using T = decltype(z);
    const int64_t n = (s.n * s.c) * s.h * s.w;
    if (n == 0) return;
    EMBER_LAUNCH(avg_pool2d_bwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s,
                 static_cast<const T*>(dy), static_cast<T*>(dx));
  });
}

void adaptive_avg_pool2d_fwd(DType t, const PoolShape& s, const void* x, void* y,
                             gpu::Stream stream) {
  dispatch_float_half(t, "adaptive_avg_pool2d", [&](auto z) {
    using T = decltype(z);
    const int64_t n = (s.n * s.c) * s.oh * s.ow;
    if (n == 0) return;
    EMBER_LAUNCH(adaptive_avg_pool2d_fwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s,
                 static_cast<const T*>(x), static_cast<T*>(y));
  });
}

void adaptive_avg_pool2d_bwd(DType t, const PoolShape& s, const void* dy, void* dx,
                             gpu::Stream stream) {
  dispatch_float_half(t, "adaptive_avg_pool2d_backward", [&](auto z) {
    using T = decltype(z);
    const int64_t n = (s.n * s.c) * s.h * s.w;
    if (n == 0) return;
    EMBER_LAUNCH(adaptive_avg_pool2d_bwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s,
                 static_cast<const T*>(dy), static_cast<T*>(dx));
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

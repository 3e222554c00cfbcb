// Batch normalisation: a reduction pass (statistics or gradient sums) whose blocks each own one
// part of one channel, a per-channel pass that merges the parts in order and works out the
// coefficients, and an elementwise pass. Data are read as float4/double2 vectors when every
// plane and pointer allows it, with several loads in flight per thread.
#include "kernels/kernel_table.h"
#include "kernels/cuda/compat.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/device_utils.cuh"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

constexpr int kUnroll = 4;

template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// The positions, in vectors of V elements, that thread threadIdx.x of the block for (channel,
// part) visits: the channel's data are n rows of sv = s / V vectors, row r starting at vector
// (r * c + channel) * sv; they are flattened to q = r * sv + col and cut into `parts` equal
// ranges. Stepping by blockDim.x needs no division.
struct ChannelWalk {
  int64_t q, q_end, row, col, sv, c_count, channel, step, d_row, d_col;

  // Block b owns part b / c of channel b % c: blocks that run together cover every channel of
  // the same rows, so when planes are small the lines one block skips are read by its
  // neighbours.
  __device__ ChannelWalk(const BatchNormShape& s, int v, int64_t parts, int64_t b) {
    sv = s.s / v;
    c_count = s.c;
    channel = b % s.c;
    const int64_t part = b / s.c;
    const int64_t total = s.n * sv, len = (total + parts - 1) / parts;
    q = part * len + threadIdx.x;
    q_end = (part + 1) * len < total ? (part + 1) * len : total;
    row = q / sv;
    col = q % sv;
    step = blockDim.x;
    d_row = step / sv;
    d_col = step % sv;
  }
  __device__ bool more() const { return q < q_end; }
  __device__ int64_t offset() const { return (row * c_count + channel) * sv + col; }
  __device__ void advance() {
    q += step;
    row += d_row;
    col += d_col;
    if (col >= sv) col -= sv, ++row;
  }
  // Up to kUnroll next offsets; returns how many.
  __device__ int next(int64_t (&off)[kUnroll]) {
    int k = 0;
    for (int u = 0; u < kUnroll; ++u)  // constant indices, so off[] stays in registers
      if (more()) off[u] = offset(), advance(), ++k;
    return k;
  }
};

// vals[u] = v[off[u]] for the k offsets of one walk step (zero past k), every load issued
// before any value is used.
template <typename T, int V>
__device__ __forceinline__ void load_step(const int64_t (&off)[kUnroll], int k, const Vec<T, V>* v,
                                          Vec<T, V> (&vals)[kUnroll]) {
  for (int u = 0; u < kUnroll; ++u) vals[u] = Vec<T, V>{};
  for (int u = 0; u < kUnroll; ++u)
    if (u < k) vals[u] = v[off[u]];
}
// The same for two tensors at the same offsets.
template <typename T, int V>
__device__ __forceinline__ void load_step(const int64_t (&off)[kUnroll], int k, const Vec<T, V>* v,
                                          Vec<T, V> (&vals)[kUnroll], const Vec<T, V>* w,
                                          Vec<T, V> (&wals)[kUnroll]) {
  for (int u = 0; u < kUnroll; ++u) vals[u] = wals[u] = Vec<T, V>{};
  for (int u = 0; u < kUnroll; ++u)
    if (u < k) vals[u] = v[off[u]], wals[u] = w[off[u]];
}

// The elementwise passes visit the (channel, part) blocks in the reverse order of the reduction
// pass before them, so they start on the data that pass read last, which may still be in L2.
__device__ __forceinline__ int64_t last_first() {
  return int64_t(gridDim.x) - 1 - blockIdx.x;
}

// A running (count, mean, M2) triple; merge() is Chan et al.'s rule.
struct Welford {
  double n = 0, mean = 0, m2 = 0;
  __device__ void merge(double nb, double mb, double m2b) {
    const double total = n + nb;
    if (nb == 0) return;
    const double delta = mb - mean, f = nb / total;
    mean += delta * f;
    m2 += m2b + delta * delta * n * f;
    n = total;
  }
};

// Block reductions of the partial statistics (block_reduce: Note [block_reduce order]).
struct WelfordOp {
  __device__ Welford operator()(Welford a, const Welford& b) const {
    a.merge(b.n, b.mean, b.m2);
    return a;
  }
};
struct SumDot {
  double sum, dot;
};
struct SumDotOp {
  __device__ SumDot operator()(SumDot a, SumDot b) const { return {a.sum + b.sum, a.dot + b.dot}; }
};

// Block (channel, part) -> partial (count, mean, M2) of that part. Each thread sums deviations
// from its own first value in double (cheap per element, no cancellation unless the data are
// far from that value relative to their spread) and turns them into a triple for the merge.
template <typename T, int V>
__global__ void batch_norm_stats_kernel(BatchNormShape s, int64_t parts, const T* __restrict__ x,
                                        double* __restrict__ partial) {
  ChannelWalk walk(s, V, parts, blockIdx.x);
  const Vec<T, V>* xv = reinterpret_cast<const Vec<T, V>*>(x);
  double shift = walk.more() ? static_cast<double>(xv[walk.offset()].v[0]) : 0.0;
  double count = 0, sum = 0, sq = 0;
  int64_t off[kUnroll];
  for (int k; (k = walk.next(off)) > 0;) {
    Vec<T, V> vals[kUnroll];
    load_step(off, k, xv, vals);
    for (int u = 0; u < kUnroll; ++u)
      if (u < k)
        for (int e = 0; e < V; ++e) {
          const double d = static_cast<double>(vals[u].v[e]) - shift;
          sum += d;
          sq += d * d;
        }
    count += k * V;
  }
  Welford w;
  if (count > 0) w = Welford{count, shift + sum / count, fmax(sq - sum * (sum / count), 0.0)};
  w = block_reduce(w, WelfordOp());
  if (threadIdx.x == 0) {
    double* out = partial + 3 * blockIdx.x;
    out[0] = w.n, out[1] = w.mean, out[2] = w.m2;
  }
}

// The per-channel coefficients of the elementwise passes, kept in the workspace after the
// partial statistics, each value already rounded to T as the CPU rounds it.
// The forward (and eval's dx): out = in * scale + shift.
struct AffineCoef {
  double scale, shift;
};
// Training's dx = (dy - mean_dy - (x - mean) * k) * a.
struct GradCoef {
  double a, mean, k, mean_dy;
};

// Per channel: the statistics used (merged parts, or the running stats in eval), the running
// stat update, save_mean/save_invstd, and the affine coefficients.
template <typename T>
__global__ void batch_norm_fwd_finalize_kernel(BatchNormShape s, int64_t parts, BatchNormParams p,
                                               const T* w, const T* b, T* rmean, T* rvar, T* smean,
                                               T* sinvstd, const double* __restrict__ partial,
                                               AffineCoef* coef) {
  for (int64_t c = global_thread(); c < s.c; c += grid_threads()) {
    double mean, var;
    if (p.training) {
      Welford acc;
      for (int64_t k = 0; k < parts; ++k) {
        const double* q = partial + 3 * (k * s.c + c);
        acc.merge(q[0], q[1], q[2]);
      }
      mean = acc.mean;
      var = acc.m2 / acc.n;
      if (rmean) rmean[c] = static_cast<T>((1 - p.momentum) * rmean[c] + p.momentum * mean);
      if (rvar)
        rvar[c] = static_cast<T>((1 - p.momentum) * rvar[c] + p.momentum * acc.m2 / (acc.n - 1));
    } else {
      mean = rmean[c];
      var = rvar[c];
    }
    const double invstd = 1.0 / sqrt(var + p.eps);
    smean[c] = static_cast<T>(mean);
    sinvstd[c] = static_cast<T>(invstd);
    const double scale = invstd * (w ? static_cast<double>(w[c]) : 1.0);
    coef[c].scale = static_cast<T>(scale);
    coef[c].shift = static_cast<T>((b ? static_cast<double>(b[c]) : 0.0) - mean * scale);
  }
}

// out = in * scale + shift per channel (the forward's normalisation, eval's dx).
template <typename T, int V>
__global__ void batch_norm_apply_kernel(BatchNormShape s, int64_t parts, const T* __restrict__ in,
                                        const AffineCoef* __restrict__ coef, T* __restrict__ out) {
  ChannelWalk walk(s, V, parts, last_first());
  const AffineCoef cf = coef[walk.channel];
  const T scale = static_cast<T>(cf.scale), shift = static_cast<T>(cf.shift);
  const Vec<T, V>* iv = reinterpret_cast<const Vec<T, V>*>(in);
  Vec<T, V>* ov = reinterpret_cast<Vec<T, V>*>(out);
  int64_t off[kUnroll];
  for (int k; (k = walk.next(off)) > 0;) {
    Vec<T, V> vals[kUnroll];
    load_step(off, k, iv, vals);
    for (int u = 0; u < kUnroll; ++u)
      if (u < k) {
        for (int e = 0; e < V; ++e) vals[u].v[e] = vals[u].v[e] * scale + shift;
        ov[off[u]] = vals[u];
      }
  }
}

// Block (channel, part) -> partial sum(dy) and sum(dy * (x - mean)) in double.
template <typename T, int V>
__global__ void batch_norm_bwd_reduce_kernel(BatchNormShape s, int64_t parts,
                                             const T* __restrict__ x, const T* __restrict__ dy,
                                             const T* __restrict__ smean,
                                             double* __restrict__ partial) {
  ChannelWalk walk(s, V, parts, blockIdx.x);
  const double mean = smean[walk.channel];
  const Vec<T, V>* xv = reinterpret_cast<const Vec<T, V>*>(x);
  const Vec<T, V>* gv = reinterpret_cast<const Vec<T, V>*>(dy);
  double sum = 0, dot = 0;
  int64_t off[kUnroll];
  for (int k; (k = walk.next(off)) > 0;) {
    Vec<T, V> xs[kUnroll], gs[kUnroll];
    load_step(off, k, xv, xs, gv, gs);
    for (int u = 0; u < kUnroll; ++u)
      if (u < k)
        for (int e = 0; e < V; ++e) {
          const double g = gs[u].v[e];
          sum += g;
          dot += g * (static_cast<double>(xs[u].v[e]) - mean);
        }
  }
  const SumDot total = block_reduce(SumDot{sum, dot}, SumDotOp());
  if (threadIdx.x == 0) {
    double* out = partial + 3 * blockIdx.x;
    out[0] = total.sum, out[1] = total.dot;
  }
}

// Per channel: dweight, dbias and the coefficients of dx: training's GradCoef
// (w*invstd, mean, dot*invstd^2/m, sum_dy/m); in eval the AffineCoef (w*invstd, 0) of the
// apply kernel, in the same place.
template <typename T>
__global__ void batch_norm_bwd_finalize_kernel(BatchNormShape s, int64_t parts, bool training,
                                               bool reduced, const T* w, const T* smean,
                                               const T* sinvstd, const double* partial, T* dw,
                                               T* db, GradCoef* grad, AffineCoef* affine) {
  const double m = static_cast<double>(s.n * s.s);
  for (int64_t c = global_thread(); c < s.c; c += grid_threads()) {
    double sum = 0, dot = 0;
    if (reduced)
      for (int64_t k = 0; k < parts; ++k) {
        sum += partial[3 * (k * s.c + c)];
        dot += partial[3 * (k * s.c + c) + 1];
      }
    const double invstd = sinvstd[c], wc = w ? static_cast<double>(w[c]) : 1.0;
    if (dw) dw[c] = static_cast<T>(dot * invstd);
    if (db) db[c] = static_cast<T>(sum);
    if (training) {
      grad[c].a = static_cast<T>(wc * invstd);
      grad[c].mean = smean[c];
      grad[c].k = static_cast<T>(dot * invstd * invstd / m);
      grad[c].mean_dy = static_cast<T>(sum / m);
    } else {
      affine[c].scale = static_cast<T>(wc * invstd);
      affine[c].shift = 0.0;
    }
  }
}

// Training dx = (dy - mean(dy) - (x - mean) * k) * w * invstd, in T as the CPU computes it.
template <typename T, int V>
__global__ void batch_norm_bwd_dx_kernel(BatchNormShape s, int64_t parts, const T* __restrict__ x,
                                         const T* __restrict__ dy,
                                         const GradCoef* __restrict__ coef, T* __restrict__ dx) {
  ChannelWalk walk(s, V, parts, last_first());
  const GradCoef cf = coef[walk.channel];
  const T ta = static_cast<T>(cf.a), tmean = static_cast<T>(cf.mean);
  const T tk = static_cast<T>(cf.k), tmdy = static_cast<T>(cf.mean_dy);
  const Vec<T, V>* xv = reinterpret_cast<const Vec<T, V>*>(x);
  const Vec<T, V>* gv = reinterpret_cast<const Vec<T, V>*>(dy);
  Vec<T, V>* dv = reinterpret_cast<Vec<T, V>*>(dx);
  int64_t off[kUnroll];
  for (int k; (k = walk.next(off)) > 0;) {
    Vec<T, V> xs[kUnroll], gs[kUnroll];
    load_step(off, k, xv, xs, gv, gs);
    for (int u = 0; u < kUnroll; ++u)
      if (u < k) {
        for (int e = 0; e < V; ++e)
          gs[u].v[e] = (gs[u].v[e] - tmdy - (xs[u].v[e] - tmean) * tk) * ta;
        dv[off[u]] = gs[u];
      }
  }
}

// Each channel's N*S values are split into this many parts, one block each: enough blocks in
// all to fill a large GPU, but at least ~2048 values per block.
int64_t batch_norm_parts(const BatchNormShape& s) {
  constexpr int64_t kMinPerBlock = 2048, kTargetBlocks = 2048;
  const int64_t by_size = (s.n * s.s + kMinPerBlock - 1) / kMinPerBlock;
  const int64_t by_grid = s.c > 0 ? (kTargetBlocks + s.c - 1) / s.c : 1;
  const int64_t parts = by_size < by_grid ? by_size : by_grid;
  return parts < 1 ? 1 : parts;
}

// The launch shape of the per-(channel, part) kernels: threads enough for a part's vectors
// (a multiple of 32, at most kBlock).
struct PartLaunch {
  int64_t parts;
  dim3 grid, block;
};
PartLaunch part_launch(const BatchNormShape& s, int v) {
  const int64_t parts = batch_norm_parts(s);
  const int64_t per_part = (s.n * (s.s / v) + parts - 1) / parts;
  int threads = 32;
  while (threads < kBlock && threads < per_part) threads *= 2;
  return {parts, dim3(static_cast<unsigned>(s.c * parts)), dim3(threads)};
}

// Vector width: float4 / double2 when every plane is a whole number of vectors and every
// pointer is aligned to one.
template <typename T>
int vector_width(const BatchNormShape& s, std::initializer_list<const void*> ptrs) {
  constexpr int v = 16 / sizeof(T);
  if (s.s % v != 0) return 1;
  for (const void* p : ptrs)
    if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0) return 1;
  return v;
}

template <typename T, int V>
void fwd_t(const BatchNormShape& s, const BatchNormParams& p, const T* x, const T* w, const T* b,
           T* rmean, T* rvar, T* y, T* smean, T* sinvstd, double* ws, gpu::Stream stream) {
  const PartLaunch pl = part_launch(s, V);
  auto* coef = reinterpret_cast<AffineCoef*>(ws + 3 * s.c * pl.parts);
  auto* stats = &batch_norm_stats_kernel<T, V>;
  auto* apply = &batch_norm_apply_kernel<T, V>;
  if (p.training) EMBER_LAUNCH(stats, pl.grid, pl.block, 0, stream, s, pl.parts, x, ws);
  EMBER_LAUNCH(batch_norm_fwd_finalize_kernel<T>, dim3(blocks_for(s.c)), dim3(kBlock), 0, stream, s,
               pl.parts, p, w, b, rmean, rvar, smean, sinvstd, ws, coef);
  EMBER_LAUNCH(apply, pl.grid, pl.block, 0, stream, s, pl.parts, x, coef, y);
}

template <typename T, int V>
void bwd_t(const BatchNormShape& s, bool training, const T* x, const T* dy, const T* w,
           const T* smean, const T* sinvstd, T* dx, T* dw, T* db, double* ws, gpu::Stream stream) {
  const PartLaunch pl = part_launch(s, V);
  // Training writes GradCoef, eval AffineCoef, in the same per-channel slots.
  double* coef = ws + 3 * s.c * pl.parts;
  auto* grad = reinterpret_cast<GradCoef*>(coef);
  auto* affine = reinterpret_cast<AffineCoef*>(coef);
  auto* sums = &batch_norm_bwd_reduce_kernel<T, V>;
  auto* grad_x = &batch_norm_bwd_dx_kernel<T, V>;
  auto* apply = &batch_norm_apply_kernel<T, V>;
  const bool reduce = training || dw || db;
  if (reduce) EMBER_LAUNCH(sums, pl.grid, pl.block, 0, stream, s, pl.parts, x, dy, smean, ws);
  EMBER_LAUNCH(batch_norm_bwd_finalize_kernel<T>, dim3(blocks_for(s.c)), dim3(kBlock), 0, stream, s,
               pl.parts, training, reduce, w, smean, sinvstd, ws, dw, db, grad, affine);
  if (!dx) return;
  if (training)
    EMBER_LAUNCH(grad_x, pl.grid, pl.block, 0, stream, s, pl.parts, x, dy, grad, dx);
  else
    EMBER_LAUNCH(apply, pl.grid, pl.block, 0, stream, s, pl.parts, dy, affine, dx);
}

}  // namespace

// Three partial statistics per part of each channel, then one GradCoef (the larger of the two
// coefficient structs) per channel.
size_t batch_norm_workspace_bytes(const BatchNormShape& s) {
  static_assert(sizeof(GradCoef) == 4 * sizeof(double) && sizeof(AffineCoef) <= sizeof(GradCoef));
  return static_cast<size_t>(s.c * 3 * batch_norm_parts(s)) * sizeof(double) +
         static_cast<size_t>(s.c) * sizeof(GradCoef);
}

void batch_norm_fwd(DType t, const BatchNormShape& s, const BatchNormParams& p, const void* x,
                    const void* weight, const void* bias, void* running_mean, void* running_var,
                    void* y, void* save_mean, void* save_invstd, double* workspace,
                    gpu::Stream stream) {
  dispatch_float(t, "batch_norm", [&](auto z) {
    using T = decltype(z);
    if (s.c == 0 || s.n * s.s == 0) return;
    auto run = [&](auto vec) {
      fwd_t<T, decltype(vec)::value>(s, p, static_cast<const T*>(x), static_cast<const T*>(weight),
                                     static_cast<const T*>(bias), static_cast<T*>(running_mean),
                                     static_cast<T*>(running_var), static_cast<T*>(y),
                                     static_cast<T*>(save_mean), static_cast<T*>(save_invstd),
                                     workspace, stream);
    };
    if (vector_width<T>(s, {x, y}) > 1)
      run(std::integral_constant<int, 16 / sizeof(T)>{});
    else
      run(std::integral_constant<int, 1>{});
  });
}

void batch_norm_bwd(DType t, const BatchNormShape& s, bool training, const void* x, const void* dy,
                    const void* weight, const void* save_mean, const void* save_invstd, void* dx,
                    void* dweight, void* dbias, double* workspace, gpu::Stream stream) {
  dispatch_float(t, "batch_norm_backward", [&](auto z) {
    using T = decltype(z);
    if (s.c == 0 || s.n * s.s == 0) return;
    auto run = [&](auto vec) {
      bwd_t<T, decltype(vec)::value>(
          s, training, static_cast<const T*>(x), static_cast<const T*>(dy),
          static_cast<const T*>(weight), static_cast<const T*>(save_mean),
          static_cast<const T*>(save_invstd), static_cast<T*>(dx), static_cast<T*>(dweight),
          static_cast<T*>(dbias), workspace, stream);
    };
    if (vector_width<T>(s, {x, dy, dx}) > 1)
      run(std::integral_constant<int, 16 / sizeof(T)>{});
    else
      run(std::integral_constant<int, 1>{});
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

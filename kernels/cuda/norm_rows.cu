// Row normalisation (layer_norm, group_norm, instance_norm; kernels/norm_rows_shape.h): one warp
// per row for rows up to kWarpRowMax elements, one block per row beyond; two passes for the
// statistics (the mean, then the squared deviations), in double, then the affine write. The
// weight gradients: per (channel, part of the rows) a partial sum in the workspace, then the
// parts added in order per channel, so every sum has a fixed order (deterministic).
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/row_reduce.cuh"
#include "kernels/kernel_table.h"

#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

template <typename T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
__device__ __forceinline__ double wide(T v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}

template <typename T, bool kWarp>
__global__ void norm_rows_fwd_kernel(NormRowsShape s, const T* __restrict__ x,
                                     const T* __restrict__ w, const T* __restrict__ b,
                                     T* __restrict__ y, stat_t<T>* __restrict__ mean_out,
                                     stat_t<T>* __restrict__ rstd_out) {
  using L = RowLayout<kWarp>;
  using C = compute_t<T>;
  const int64_t len = s.len;
  for (int64_t r = L::first_row(); r < s.rows; r += L::row_step()) {
    const T* xr = x + r * len;
    T* yr = y + r * len;
    double sum = 0;
    for (int64_t j = L::lane(); j < len; j += L::width()) sum += wide(xr[j]);
    const double mean = row_reduce<kWarp>(sum, SumOp()) / static_cast<double>(len);
    double sq = 0;
    for (int64_t j = L::lane(); j < len; j += L::width()) {
      const double d = wide(xr[j]) - mean;
      sq += d * d;
    }
    const double var = row_reduce<kWarp>(sq, SumOp()) / static_cast<double>(len);
    const double rstd = 1.0 / ::sqrt(var + s.eps);
    if (L::lane() == 0) {
      mean_out[r] = static_cast<stat_t<T>>(mean);
      rstd_out[r] = static_cast<stat_t<T>>(rstd);
    }
    const C m = static_cast<C>(mean), rs = static_cast<C>(rstd);
    for (int64_t j = L::lane(); j < len; j += L::width()) {
      const int64_t ch = s.channel(r, j);
      C v = (C(xr[j]) - m) * rs;
      if (w) v *= C(w[ch]);
      if (b) v += C(b[ch]);
      yr[j] = narrow<T>(v);
    }
  }
}

// dx per row: the row sums of gw = dy * w and gw * xhat, then the closed form.
template <typename T, bool kWarp>
__global__ void norm_rows_bwd_dx_kernel(NormRowsShape s, const T* __restrict__ x,
                                        const T* __restrict__ dy, const T* __restrict__ w,
                                        const stat_t<T>* __restrict__ mean,
                                        const stat_t<T>* __restrict__ rstd, T* __restrict__ dx) {
  using L = RowLayout<kWarp>;
  using C = compute_t<T>;
  const int64_t len = s.len;
  for (int64_t r = L::first_row(); r < s.rows; r += L::row_step()) {
    const T *xr = x + r * len, *gr = dy + r * len;
    const C m = static_cast<C>(mean[r]), rs = static_cast<C>(rstd[r]);
    double a = 0, bs = 0;
    for (int64_t j = L::lane(); j < len; j += L::width()) {
      const C gw = w ? C(gr[j]) * C(w[s.channel(r, j)]) : C(gr[j]);
      a += static_cast<double>(gw);
      bs += static_cast<double>(gw) * static_cast<double>((C(xr[j]) - m) * rs);
    }
    a = row_reduce<kWarp>(a, SumOp());
    bs = row_reduce<kWarp>(bs, SumOp());
    const C ma = static_cast<C>(a / static_cast<double>(len));
    const C mb = static_cast<C>(bs / static_cast<double>(len));
    T* dr = dx + r * len;
    for (int64_t j = L::lane(); j < len; j += L::width()) {
      const C gw = w ? C(gr[j]) * C(w[s.channel(r, j)]) : C(gr[j]);
      const C xhat = (C(xr[j]) - m) * rs;
      dr[j] = narrow<T>(rs * (gw - ma - xhat * mb));
    }
  }
}

// How many parts the rows of each channel are cut into for the weight gradients: enough blocks
// or threads to fill a GPU, at most one part per row of the channel.
int64_t weight_parts(const NormRowsShape& s) {
  const int64_t per_group = s.rows / s.groups, channels = s.channels();
  if (channels == 0 || per_group == 0) return 1;
  const bool columns = s.groups == 1 && s.inner == 1;
  const int64_t want =
      columns ? (65536 + channels - 1) / channels : (2048 + channels - 1) / channels;
  int64_t p = want < 64 ? want : 64;
  if (p > per_group) p = per_group;
  return p < 1 ? 1 : p;
}

// Layer norm's weight gradients (groups 1, inner 1): a thread per (column, part), walking its
// rows in order; neighbouring threads read neighbouring columns.
template <typename T>
__global__ void norm_rows_bwd_columns_kernel(NormRowsShape s, int64_t parts,
                                             const T* __restrict__ x, const T* __restrict__ dy,
                                             const stat_t<T>* __restrict__ mean,
                                             const stat_t<T>* __restrict__ rstd,
                                             double* __restrict__ ws) {
  using C = compute_t<T>;
  const int64_t len = s.len;
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t part = blockIdx.y;
  if (col >= len) return;
  const int64_t chunk = (s.rows + parts - 1) / parts;
  const int64_t r0 = part * chunk, r1 = r0 + chunk < s.rows ? r0 + chunk : s.rows;
  double g = 0, gx = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const C gv = C(dy[r * len + col]);
    const C xhat = (C(x[r * len + col]) - static_cast<C>(mean[r])) * static_cast<C>(rstd[r]);
    g += static_cast<double>(gv);
    gx += static_cast<double>(gv * xhat);
  }
  ws[(part * len + col) * 2] = g;
  ws[(part * len + col) * 2 + 1] = gx;
}

// Group and instance norm's weight gradients: a block per (channel, part), its threads striding
// over the part's elements of the channel, combined by the block's fixed reduction tree.
template <typename T>
__global__ void norm_rows_bwd_channels_kernel(NormRowsShape s, int64_t parts,
                                              const T* __restrict__ x, const T* __restrict__ dy,
                                              const stat_t<T>* __restrict__ mean,
                                              const stat_t<T>* __restrict__ rstd,
                                              double* __restrict__ ws) {
  const int64_t channels = s.channels(), cpr = s.channels_per_row(), inner = s.inner;
  const int64_t per_group = s.rows / s.groups;
  const int64_t chunk = (per_group + parts - 1) / parts;
  for (int64_t item = blockIdx.x; item < channels * parts; item += gridDim.x) {
    const int64_t ch = item % channels, part = item / channels;
    const int64_t gi = ch / cpr, c = ch % cpr;
    const int64_t n0 = part * chunk, n1 = n0 + chunk < per_group ? n0 + chunk : per_group;
    double g = 0, gx = 0;
    for (int64_t q = threadIdx.x; q < (n1 - n0) * inner; q += blockDim.x) {
      const int64_t r = (n0 + q / inner) * s.groups + gi;
      const int64_t off = r * s.len + c * inner + q % inner;
      const double gv = wide(dy[off]);
      g += gv;
      gx += gv * (wide(x[off]) - static_cast<double>(mean[r])) * static_cast<double>(rstd[r]);
    }
    g = row_reduce<false>(g, SumOp());
    gx = row_reduce<false>(gx, SumOp());
    if (threadIdx.x == 0) {
      ws[(part * channels + ch) * 2] = g;
      ws[(part * channels + ch) * 2 + 1] = gx;
    }
  }
}

// dweight/dbias per channel: the parts added in order.
template <typename T>
__global__ void norm_rows_bwd_merge_kernel(int64_t channels, int64_t parts,
                                           const double* __restrict__ ws, T* __restrict__ dw,
                                           T* __restrict__ db) {
  for (int64_t ch = global_thread(); ch < channels; ch += grid_threads()) {
    double g = 0, gx = 0;
    for (int64_t p = 0; p < parts; ++p) {
      g += ws[(p * channels + ch) * 2];
      gx += ws[(p * channels + ch) * 2 + 1];
    }
    if (dw) dw[ch] = narrow<T>(gx);
    if (db) db[ch] = narrow<T>(g);
  }
}

}  // namespace

void norm_rows_fwd(DType t, const NormRowsShape& s, const void* x, const void* weight,
                   const void* bias, void* y, void* mean, void* rstd, gpu::Stream stream) {
  dispatch_float_half(t, "norm_rows_fwd", [&](auto zero) {
    using T = decltype(zero);
    if (s.rows == 0 || s.len == 0) return;
    const bool warp = s.len <= kWarpRowMax;
    auto* k = warp ? &norm_rows_fwd_kernel<T, true> : &norm_rows_fwd_kernel<T, false>;
    EMBER_LAUNCH(k, dim3(row_blocks(s.rows, warp)), dim3(kRowBlock), 0, stream, s,
                 static_cast<const T*>(x), static_cast<const T*>(weight),
                 static_cast<const T*>(bias), static_cast<T*>(y), static_cast<stat_t<T>*>(mean),
                 static_cast<stat_t<T>*>(rstd));
  });
}

size_t norm_rows_bwd_workspace_bytes(const NormRowsShape& s) {
  return static_cast<size_t>(weight_parts(s) * s.channels() * 2) * sizeof(double);
}

void norm_rows_bwd(DType t, const NormRowsShape& s, const void* x, const void* dy,
                   const void* weight, const void* mean, const void* rstd, void* dx, void* dweight,
                   void* dbias, double* workspace, gpu::Stream stream) {
  dispatch_float_half(t, "norm_rows_bwd", [&](auto zero) {
    using T = decltype(zero);
    using S = stat_t<T>;
    if (s.rows == 0 || s.len == 0) return;
    const T *xp = static_cast<const T*>(x), *gp = static_cast<const T*>(dy);
    const S *mp = static_cast<const S*>(mean), *rp = static_cast<const S*>(rstd);
    if (dx) {
      const bool warp = s.len <= kWarpRowMax;
      auto* k = warp ? &norm_rows_bwd_dx_kernel<T, true> : &norm_rows_bwd_dx_kernel<T, false>;
      EMBER_LAUNCH(k, dim3(row_blocks(s.rows, warp)), dim3(kRowBlock), 0, stream, s, xp, gp,
                   static_cast<const T*>(weight), mp, rp, static_cast<T*>(dx));
    }
    if (!dweight && !dbias) return;
    const int64_t parts = weight_parts(s), channels = s.channels();
    if (s.groups == 1 && s.inner == 1) {
      const dim3 grid(static_cast<unsigned>((s.len + kBlock - 1) / kBlock),
                      static_cast<unsigned>(parts));
      EMBER_LAUNCH(norm_rows_bwd_columns_kernel<T>, grid, dim3(kBlock), 0, stream, s, parts, xp, gp,
                   mp, rp, workspace);
    } else {
      EMBER_LAUNCH(norm_rows_bwd_channels_kernel<T>, dim3(blocks_for(channels * parts, 1)),
                   dim3(kRowBlock), 0, stream, s, parts, xp, gp, mp, rp, workspace);
    }
    EMBER_LAUNCH(norm_rows_bwd_merge_kernel<T>, dim3(blocks_for(channels)), dim3(kBlock), 0, stream,
                 channels, parts, workspace, static_cast<T*>(dweight), static_cast<T*>(dbias));
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

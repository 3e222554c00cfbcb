// Losses: cross entropy computes each row's log-sum-exp, its log-probabilities and its loss in
// one kernel (the rows of softmax.cu, with the loss folded into the write pass); nll, mse and
// the gradients are grid-stride loops; a reduced loss sums per-position doubles in one block.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"
#include "kernels/cuda/row_reduce.cuh"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

// The loss at one position from w[target] lp[target] and sum_k w[k] lp[k] (kernels/cpu/loss.cpp's
// formula; w = 1 without class weights).
__device__ __forceinline__ double nll_value(const NllShape& d, int64_t t, double lp_t,
                                            double lp_sum) {
  if (t == d.ignore_index) return 0.0;
  double l = -(1 - d.smoothing) * lp_t;
  if (d.smoothing > 0) l -= d.smoothing / static_cast<double>(d.c) * lp_sum;
  return l;
}

// w[k] as a double, 1 without class weights.
template <typename T>
__device__ __forceinline__ double class_weight(const T* w, int64_t k) {
  return w ? static_cast<double>(w[k]) : 1.0;
}

template <typename T>
__device__ __forceinline__ void store_loss(int64_t p, double l, T* loss, double* acc) {
  if (loss) loss[p] = static_cast<T>(l);
  if (acc) acc[p] = l;
}

// s == 1: row r holds the c logits of position r.
template <typename T, bool kWarp>
__global__ void cross_entropy_fwd_rows_kernel(NllShape d, const T* __restrict__ x,
                                              const int64_t* __restrict__ target,
                                              const T* __restrict__ w,
                                              T* __restrict__ lp, T* __restrict__ loss,
                                              double* __restrict__ acc) {
  using L = RowLayout<kWarp>;
  const int64_t c = d.c;
  for (int64_t r = L::first_row(); r < d.n; r += L::row_step()) {
    const T* xr = x + r * c;
    T* lr = lp + r * c;
    const int64_t t = target[r];
    T m = T(-INFINITY);
    for (int64_t k = L::lane(); k < c; k += L::width()) m = MaxOp()(m, xr[k]);
    m = row_reduce<kWarp>(m, MaxOp());
    if (m == T(-INFINITY)) m = T(0);
    double s = 0;
    for (int64_t k = L::lane(); k < c; k += L::width()) s += static_cast<double>(exp(xr[k] - m));
    s = row_reduce<kWarp>(s, SumOp());
    const T lse = static_cast<T>(static_cast<double>(m) + ::log(s));
    double lp_sum = 0, lp_t = 0;
    for (int64_t k = L::lane(); k < c; k += L::width()) {
      const T v = xr[k] - lse;
      lr[k] = v;
      lp_sum += class_weight(w, k) * static_cast<double>(v);
      if (k == t) lp_t = class_weight(w, k) * static_cast<double>(v);
    }
    lp_sum = row_reduce<kWarp>(lp_sum, SumOp());
    lp_t = row_reduce<kWarp>(lp_t, SumOp());  // one thread holds it, the others add 0
    if (L::lane() == 0) store_loss(r, nll_value(d, t, lp_t, lp_sum), loss, acc);
  }
}

// s > 1: one thread per position p = i * s + j, walking its class column with stride s.
template <typename T>
__global__ void cross_entropy_fwd_cols_kernel(NllShape d, const T* __restrict__ x,
                                              const int64_t* __restrict__ target,
                                              const T* __restrict__ w,
                                              T* __restrict__ lp, T* __restrict__ loss,
                                              double* __restrict__ acc) {
  const int64_t c = d.c, st = d.s, positions = d.n * d.s;
  for (int64_t p = global_thread(); p < positions; p += grid_threads()) {
    const int64_t base = (p / st) * c * st + p % st, t = target[p];
    const T* xc = x + base;
    T* lc = lp + base;
    T m = T(-INFINITY);
    for (int64_t k = 0; k < c; ++k) m = MaxOp()(m, xc[k * st]);
    if (m == T(-INFINITY)) m = T(0);
    double s = 0;
    for (int64_t k = 0; k < c; ++k) s += static_cast<double>(exp(xc[k * st] - m));
    const T lse = static_cast<T>(static_cast<double>(m) + ::log(s));
    double lp_sum = 0, lp_t = 0;
    for (int64_t k = 0; k < c; ++k) {
      const T v = xc[k * st] - lse;
      lc[k * st] = v;
      lp_sum += class_weight(w, k) * static_cast<double>(v);
      if (k == t) lp_t = class_weight(w, k) * static_cast<double>(v);
    }
    store_loss(p, nll_value(d, t, lp_t, lp_sum), loss, acc);
  }
}

template <typename T>
__global__ void nll_fwd_kernel(NllShape d, const T* __restrict__ lp,
                               const int64_t* __restrict__ target, const T* __restrict__ w,
                               T* __restrict__ loss, double* __restrict__ acc) {
  const int64_t c = d.c, st = d.s, positions = d.n * d.s;
  for (int64_t p = global_thread(); p < positions; p += grid_threads()) {
    const int64_t t = target[p];
    double l = 0;
    if (t != d.ignore_index) {
      const T* col = lp + (p / st) * c * st + p % st;
      double sum = 0;
      if (d.smoothing > 0)
        for (int64_t k = 0; k < c; ++k)
          sum += class_weight(w, k) * static_cast<double>(col[k * st]);
      l = nll_value(d, t, class_weight(w, t) * static_cast<double>(col[t * st]), sum);
    }
    store_loss(p, l, loss, acc);
  }
}

// One thread per element of dx [n, c, s].
template <typename T>
__global__ void nll_bwd_kernel(NllShape d, bool fused, const T* __restrict__ lp,
                               const int64_t* __restrict__ target, const T* __restrict__ w,
                               const T* __restrict__ grad, int64_t gstride, double scale,
                               T* __restrict__ dx) {
  const int64_t c = d.c, st = d.s, total = d.n * d.c * d.s;
  const T smooth = static_cast<T>(d.smoothing / static_cast<double>(c));
  const T keep = static_cast<T>(1 - d.smoothing);
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const int64_t i = e / (c * st), k = (e / st) % c, p = i * st + e % st;
    const int64_t t = target[p];
    if (t == d.ignore_index) {
      dx[e] = T(0);
      continue;
    }
    const T g = static_cast<T>(static_cast<double>(grad[p * gstride]) * scale);
    if (!w) {  // unweighted: w = 1, W = c
      T v = fused ? g * (exp(lp[e]) - smooth) : T(0);
      if (k == t) v -= fused ? g * keep : g;
      dx[e] = v;
      continue;
    }
    const T wt = w[t] * keep;
    T v = fused ? g * (exp(lp[e]) * (wt + smooth * static_cast<T>(d.weight_total)) - smooth * w[k])
                : T(0);
    if (k == t) v -= fused ? g * wt : g * w[t];
    dx[e] = v;
  }
}

// Per element (x - y)^2, and per block the sum in double (when partial is not null).
template <typename T>
__global__ void mse_fwd_kernel(int64_t n, const T* __restrict__ x, const T* __restrict__ y,
                               T* __restrict__ out, double* __restrict__ partial) {
  double acc = 0;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const T dv = x[i] - y[i];
    if (out) out[i] = dv * dv;
    acc += static_cast<double>(dv) * dv;
  }
  if (partial) {  // uniform over the block
    acc = row_reduce<false>(acc, SumOp());
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
  }
}

template <typename T>
__global__ void mse_bwd_kernel(int64_t n, const T* __restrict__ x, const T* __restrict__ y,
                               const T* __restrict__ grad, int64_t gstride, T two,
                               T* __restrict__ dx) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    dx[i] = two * (x[i] - y[i]) * grad[i * gstride];
}

// total[0] = sum(v[0 .. n)) / divisor, in one block.
template <typename T>
__global__ void sum_doubles_kernel(int64_t n, const double* __restrict__ v, double divisor,
                                   T* __restrict__ total) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += v[i];
  s = row_reduce<false>(s, SumOp());
  if (threadIdx.x == 0) total[0] = static_cast<T>(s / divisor);
}

template <typename T>
void sum_doubles(int64_t n, const double* v, double divisor, void* total, gpu::Stream stream) {
  EMBER_LAUNCH(sum_doubles_kernel<T>, dim3(1), dim3(kRowBlock), 0, stream, n, v, divisor,
               static_cast<T*>(total));
}

// Partial sums of a reduced mse_loss: one per block.
constexpr int64_t kMsePartials = 256;

}  // namespace

// One double per position, summed in a fixed order by one block.
size_t nll_workspace_bytes(const NllShape& s) {
  return static_cast<size_t>(s.n * s.s) * sizeof(double);
}

size_t mse_workspace_bytes(int64_t) {
  return kMsePartials * sizeof(double);
}

void cross_entropy_fwd(DType t, const NllShape& d, const void* logits, const int64_t* target,
                       const void* weight, void* log_probs, void* loss, double* scratch,
                       double divisor, void* total, gpu::Stream stream) {
  dispatch_float(t, "cross_entropy_fwd", [&](auto zero) {
    using T = decltype(zero);
    const int64_t positions = d.n * d.s;
    double* acc = total ? scratch : nullptr;
    const T* x = static_cast<const T*>(logits);
    T* lp = static_cast<T*>(log_probs);
    T* per = static_cast<T*>(loss);
    const T* w = static_cast<const T*>(weight);
    if (positions > 0 && d.s > 1) {
      EMBER_LAUNCH(cross_entropy_fwd_cols_kernel<T>, dim3(blocks_for(positions)), dim3(kBlock), 0,
                   stream, d, x, target, w, lp, per, acc);
    } else if (positions > 0 && d.c <= kWarpRowMax) {
      auto* k = &cross_entropy_fwd_rows_kernel<T, true>;
      EMBER_LAUNCH(k, dim3(row_blocks(d.n, true)), dim3(kRowBlock), 0, stream, d, x, target, w,
                   lp, per, acc);
    } else if (positions > 0) {
      auto* k = &cross_entropy_fwd_rows_kernel<T, false>;
      EMBER_LAUNCH(k, dim3(row_blocks(d.n, false)), dim3(kRowBlock), 0, stream, d, x, target, w,
                   lp, per, acc);
    }
    if (total) sum_doubles<T>(positions, acc, divisor, total, stream);
  });
}

void nll_fwd(DType t, const NllShape& d, const void* log_probs, const int64_t* target,
             const void* weight, void* loss, double* scratch, double divisor, void* total,
             gpu::Stream stream) {
  dispatch_float(t, "nll_fwd", [&](auto zero) {
    using T = decltype(zero);
    const int64_t positions = d.n * d.s;
    double* acc = total ? scratch : nullptr;
    if (positions > 0)
      EMBER_LAUNCH(nll_fwd_kernel<T>, dim3(blocks_for(positions)), dim3(kBlock), 0, stream, d,
                   static_cast<const T*>(log_probs), target, static_cast<const T*>(weight),
                   static_cast<T*>(loss), acc);
    if (total) sum_doubles<T>(positions, acc, divisor, total, stream);
  });
}

void nll_bwd(DType t, const NllShape& d, bool fused, const void* log_probs, const int64_t* target,
             const void* weight, const void* grad, int64_t grad_stride, double scale, void* dx,
             gpu::Stream stream) {
  dispatch_float(t, "nll_bwd", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = d.n * d.c * d.s;
    if (n == 0) return;
    EMBER_LAUNCH(nll_bwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, d, fused,
                 static_cast<const T*>(log_probs), target, static_cast<const T*>(weight),
                 static_cast<const T*>(grad), grad_stride, scale, static_cast<T*>(dx));
  });
}

void mse_fwd(DType t, int64_t n, const void* x, const void* y, void* loss, double* scratch,
             double divisor, void* total, gpu::Stream stream) {
  dispatch_float(t, "mse_fwd", [&](auto zero) {
    using T = decltype(zero);
    const unsigned blocks = n == 0 ? 0
                            : blocks_for(n) < kMsePartials
                                ? blocks_for(n)
                                : static_cast<unsigned>(kMsePartials);
    if (blocks > 0)
      EMBER_LAUNCH(mse_fwd_kernel<T>, dim3(blocks), dim3(kBlock), 0, stream, n,
                   static_cast<const T*>(x), static_cast<const T*>(y), static_cast<T*>(loss),
                   total ? scratch : nullptr);
    if (total) sum_doubles<T>(blocks, scratch, divisor, total, stream);
  });
}

void mse_bwd(DType t, int64_t n, const void* x, const void* y, const void* grad,
             int64_t grad_stride, double scale, void* dx, gpu::Stream stream) {
  dispatch_float(t, "mse_bwd", [&](auto zero) {
    using T = decltype(zero);
    if (n == 0) return;
    EMBER_LAUNCH(mse_bwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, n,
                 static_cast<const T*>(x), static_cast<const T*>(y), static_cast<const T*>(grad),
                 grad_stride, static_cast<T>(2 * scale), static_cast<T*>(dx));
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

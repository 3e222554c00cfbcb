#include "kernels/kernel_table.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {

namespace {

// Channels run in parallel when there is enough work in total; each channel's sums stay on one
// thread, so results do not depend on the thread count.
bool worth_parallel(const BatchNormShape& sh) {
  return sh.n * sh.c * sh.s >= kParallelGrain && sh.c > 1 && !omp_in_parallel();
}

// Sum of term(0..n) in double with kLanes independent accumulators, so the compiler can
// vectorise it (a single accumulator is a serial chain of dependent adds). The order of the
// additions is fixed, so results stay independent of the thread count.
constexpr int kLanes = 8;
template <typename F>
double lane_sum(int64_t n, F&& term) {
  double acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += term(j + k);
  double total = 0;
  for (; j < n; ++j) total += term(j);
  for (int k = 0; k < kLanes; ++k) total += acc[k];
  return total;
}

// Accumulators for the one-pass sums below: enough independent chains of double adds to keep the
// vector units busy (four AVX-512 registers per sum). They run over all n rows of a channel and
// are combined once, so short rows (8x8 images) pay for the combination once per channel.
constexpr int kWideLanes = 32;

struct WideSums {
  double a[kWideLanes] = {}, b[kWideLanes] = {};
  double tail_a = 0, tail_b = 0;
  void total(double& sa, double& sb) const {
    sa = tail_a, sb = tail_b;
    for (int k = 0; k < kWideLanes; ++k) sa += a[k], sb += b[k];
  }
};

// acc += sum(x - shift) and sum((x - shift)^2) over one row of n values.
template <typename T>
void wide_sums_x(int64_t n, const T* x, double shift, WideSums& acc) {
  int64_t j = 0;
  for (; j + kWideLanes <= n; j += kWideLanes)
    for (int k = 0; k < kWideLanes; ++k) {
      const double d = x[j + k] - shift;
      acc.a[k] += d;
      acc.b[k] += d * d;
    }
  for (; j < n; ++j) {
    const double d = x[j] - shift;
    acc.tail_a += d;
    acc.tail_b += d * d;
  }
}

// acc += sum(dy) and sum(dy * (x - mean)) over one row of n values.
template <typename T>
void wide_sums_dy(int64_t n, const T* dy, const T* x, double mean, WideSums& acc) {
  int64_t j = 0;
  for (; j + kWideLanes <= n; j += kWideLanes)
    for (int k = 0; k < kWideLanes; ++k) {
      const double g = dy[j + k];
      acc.a[k] += g;
      acc.b[k] += g * (x[j + k] - mean);
    }
  for (; j < n; ++j) {
    acc.tail_a += dy[j];
    acc.tail_b += static_cast<double>(dy[j]) * (x[j] - mean);
  }
}

template <typename T>
void fwd(const BatchNormShape& sh, const BatchNormParams& p, const T* x, const T* w, const T* b,
         T* rmean, T* rvar, T* y, T* smean, T* sinvstd) {
  const int64_t n = sh.n, c_count = sh.c, s = sh.s, m = n * s;
#pragma omp parallel for schedule(static) if (worth_parallel(sh))
  for (int64_t c = 0; c < c_count; ++c) {
    double mean, var;
    if (p.training && std::is_same_v<T, float>) {
      // Note [One-pass statistics]: float data summed in double, shifted by the channel's first
      // value, loses nothing to cancellation worth measuring (double has 29 more bits), so
      // the mean and variance come from one pass instead of two. float64 keeps two passes.
      const double shift = m > 0 ? static_cast<double>(x[c * s]) : 0.0;
      WideSums acc;
      for (int64_t i = 0; i < n; ++i) wide_sums_x(s, x + (i * c_count + c) * s, shift, acc);
      double sum, sq;
      acc.total(sum, sq);
      const double dmean = sum / static_cast<double>(m);
      mean = shift + dmean;
      sq = std::max(0.0, sq - sum * dmean);  // sum of squared deviations from the mean
      var = sq / static_cast<double>(m);
      if (rmean) rmean[c] = static_cast<T>((1 - p.momentum) * rmean[c] + p.momentum * mean);
      if (rvar)
        rvar[c] = static_cast<T>((1 - p.momentum) * rvar[c] +
                                 p.momentum * sq / static_cast<double>(m - 1));
    } else if (p.training) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T* px = x + (i * c_count + c) * s;
        sum += lane_sum(s, [px](int64_t j) { return static_cast<double>(px[j]); });
      }
      mean = sum / static_cast<double>(m);
      double sq = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T* px = x + (i * c_count + c) * s;
        sq += lane_sum(s, [px, mean](int64_t j) {
          const double d = px[j] - mean;
          return d * d;
        });
      }
      var = sq / static_cast<double>(m);
      if (rmean) rmean[c] = static_cast<T>((1 - p.momentum) * rmean[c] + p.momentum * mean);
      if (rvar)
        rvar[c] = static_cast<T>((1 - p.momentum) * rvar[c] +
                                 p.momentum * sq / static_cast<double>(m - 1));
    } else {
      mean = rmean[c];
      var = rvar[c];
    }
    const double invstd = 1.0 / std::sqrt(var + p.eps);
    smean[c] = static_cast<T>(mean);
    sinvstd[c] = static_cast<T>(invstd);
    const double scale_d = invstd * (w ? static_cast<double>(w[c]) : 1.0);
    const T scale = static_cast<T>(scale_d);
    const T shift = static_cast<T>((b ? static_cast<double>(b[c]) : 0.0) - mean * scale_d);
    for (int64_t i = 0; i < n; ++i) {
      const T* px = x + (i * c_count + c) * s;
      T* py = y + (i * c_count + c) * s;
      for (int64_t j = 0; j < s; ++j) py[j] = px[j] * scale + shift;
    }
  }
}

template <typename T>
void bwd(const BatchNormShape& sh, bool training, const T* x, const T* dy, const T* w,
         const T* smean, const T* sinvstd, T* dx, T* dw, T* db) {
  const int64_t n = sh.n, c_count = sh.c, s = sh.s;
  const double m = static_cast<double>(n * s);
#pragma omp parallel for schedule(static) if (worth_parallel(sh))
  for (int64_t c = 0; c < c_count; ++c) {
    const double mean = smean[c], invstd = sinvstd[c];
    // sum_dy = sum(dy), dot = sum(dy * (x - mean)).
    double sum_dy = 0, dot = 0;
    if (training || dw || db) {
      WideSums acc;
      for (int64_t i = 0; i < n; ++i)
        wide_sums_dy(s, dy + (i * c_count + c) * s, x + (i * c_count + c) * s, mean, acc);
      acc.total(sum_dy, dot);
    }
    if (dw) dw[c] = static_cast<T>(dot * invstd);
    if (db) db[c] = static_cast<T>(sum_dy);
    if (!dx) continue;
    const double wc = w ? static_cast<double>(w[c]) : 1.0;
    if (training) {
      // dx = w * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), xhat = (x - mean) * invstd.
      const T ta = static_cast<T>(wc * invstd), tmean = static_cast<T>(mean);
      const T tk = static_cast<T>(dot * invstd * invstd / m), tmdy = static_cast<T>(sum_dy / m);
      for (int64_t i = 0; i < n; ++i) {
        const T* px = x + (i * c_count + c) * s;
        const T* pg = dy + (i * c_count + c) * s;
        T* pd = dx + (i * c_count + c) * s;
        for (int64_t j = 0; j < s; ++j) pd[j] = (pg[j] - tmdy - (px[j] - tmean) * tk) * ta;
      }
    } else {
      const T a = static_cast<T>(wc * invstd);
      for (int64_t i = 0; i < n; ++i) {
        const T* pg = dy + (i * c_count + c) * s;
        T* pd = dx + (i * c_count + c) * s;
        for (int64_t j = 0; j < s; ++j) pd[j] = pg[j] * a;
      }
    }
  }
}

}  // namespace

size_t batch_norm_workspace_bytes(const BatchNormShape&) {
  return 0;
}

void batch_norm_fwd(DType t, const BatchNormShape& shape, const BatchNormParams& params,
                    const void* x, const void* weight, const void* bias, void* running_mean,
                    void* running_var, void* y, void* save_mean, void* save_invstd, double*,
                    Stream) {
  EMBER_DISPATCH_FLOAT(t, "batch_norm", [&] {
    fwd<scalar_t>(shape, params, static_cast<const scalar_t*>(x),
                  static_cast<const scalar_t*>(weight), static_cast<const scalar_t*>(bias),
                  static_cast<scalar_t*>(running_mean), static_cast<scalar_t*>(running_var),
                  static_cast<scalar_t*>(y), static_cast<scalar_t*>(save_mean),
                  static_cast<scalar_t*>(save_invstd));
  });
}

void batch_norm_bwd(DType t, const BatchNormShape& shape, bool training, const void* x,
                    const void* dy, const void* weight, const void* save_mean,
                    const void* save_invstd, void* dx, void* dweight, void* dbias, double*, Stream) {
  EMBER_DISPATCH_FLOAT(t, "batch_norm_backward", [&] {
    bwd<scalar_t>(shape, training, static_cast<const scalar_t*>(x),
                  static_cast<const scalar_t*>(dy), static_cast<const scalar_t*>(weight),
                  static_cast<const scalar_t*>(save_mean),
                  static_cast<const scalar_t*>(save_invstd), static_cast<scalar_t*>(dx),
                  static_cast<scalar_t*>(dweight), static_cast<scalar_t*>(dbias));
  });
}

}  // namespace ember::kernels::cpu

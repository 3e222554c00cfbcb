// Losses on the cpu: cross entropy (log_softmax, then the nll), nll_loss and mse_loss, forward
// and backward. Sums run in double; a reduced loss is written as t(sum / divisor).
#include "kernels/kernel_table.h"

#include <cmath>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {

namespace {

bool large(int64_t work) {
  return work >= kParallelGrain && !omp_in_parallel();
}

template <typename T>
double nll_sum(const NllShape& sh, const T* lp, const int64_t* tgt, const T* w, T* loss) {
  const int64_t positions = sh.n * sh.s, c = sh.c, s = sh.s, ignore = sh.ignore_index;
  const double eps = sh.smoothing;
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) if (large(positions * c))
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t i = p / s, j = p % s, t = tgt[p];
    double l = 0;
    if (t != ignore) {
      const T* col = lp + i * c * s + j;
      l = -(1 - eps) * (w ? static_cast<double>(w[t]) : 1.0) * static_cast<double>(col[t * s]);
      if (eps > 0) {
        double sum = 0;
        for (int64_t k = 0; k < c; ++k)
          sum += w ? static_cast<double>(w[k]) * col[k * s] : static_cast<double>(col[k * s]);
        l -= eps / static_cast<double>(c) * sum;
      }
    }
    if (loss) loss[p] = static_cast<T>(l);
    total += l;
  }
  return total;
}

template <typename T>
void nll_grad(const NllShape& sh, bool fused, const T* lp, const int64_t* tgt, const T* w,
              const T* grad, int64_t gstride, double scale, T* dx) {
  const int64_t n = sh.n, c = sh.c, s = sh.s, ignore = sh.ignore_index;
  const double eps = sh.smoothing;
  const T smooth = static_cast<T>(eps / static_cast<double>(c));
  const T wsum = w ? static_cast<T>(sh.weight_total) : static_cast<T>(c);
#pragma omp parallel for schedule(static) if (large(n * c * s))
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* ti = tgt + i * s;
    const T* li = lp ? lp + i * c * s : nullptr;
    T* di = dx + i * c * s;
    for (int64_t k = 0; k < c; ++k) {
      for (int64_t j = 0; j < s; ++j) {
        const int64_t t = ti[j];
        if (t == ignore) {
          di[k * s + j] = T(0);
          continue;
        }
        const T g = static_cast<T>(static_cast<double>(grad[(i * s + j) * gstride]) * scale);
        if (!w) {  // unweighted: w = 1, W = c
          T v = fused ? g * (std::exp(li[k * s + j]) - smooth) : T(0);
          if (k == t) v -= fused ? g * static_cast<T>(1 - eps) : g;
          di[k * s + j] = v;
          continue;
        }
        const T wt = w[t] * static_cast<T>(1 - eps);
        T v = fused ? g * (std::exp(li[k * s + j]) * (wt + smooth * wsum) - smooth * w[k]) : T(0);
        if (k == t) v -= fused ? g * wt : g * w[t];
        di[k * s + j] = v;
      }
    }
  }
}

template <typename T>
double mse_sum(int64_t n, const T* x, const T* y, T* out) {
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) if (large(n))
  for (int64_t i = 0; i < n; ++i) {
    const T d = x[i] - y[i];
    if (out) out[i] = d * d;
    total += static_cast<double>(d) * d;
  }
  return total;
}

template <typename T>
void mse_grad(int64_t n, const T* x, const T* y, const T* grad, int64_t gstride, double scale,
              T* dx) {
  const T two = static_cast<T>(2 * scale);
  parallel_range(n, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) dx[i] = two * (x[i] - y[i]) * grad[i * gstride];
  });
}

}  // namespace

size_t nll_workspace_bytes(const NllShape&) {
  return 0;
}

void nll_fwd(DType t, const NllShape& s, const void* log_probs, const int64_t* target,
             const void* weight, void* loss, double*, double divisor, void* total, Stream) {
  EMBER_DISPATCH_FLOAT(t, "nll_loss", [&] {
    const double sum = nll_sum<scalar_t>(s, static_cast<const scalar_t*>(log_probs), target,
                                         static_cast<const scalar_t*>(weight),
                                         static_cast<scalar_t*>(loss));
    if (total) *static_cast<scalar_t*>(total) = static_cast<scalar_t>(sum / divisor);
  });
}

void cross_entropy_fwd(DType t, const NllShape& s, const void* logits, const int64_t* target,
                       const void* weight, void* log_probs, void* loss, double* workspace,
                       double divisor, void* total, Stream stream) {
  if (s.n * s.c * s.s > 0) softmax_fwd(t, {s.n, s.c, s.s}, /*log=*/true, logits, log_probs, stream);
  nll_fwd(t, s, log_probs, target, weight, loss, workspace, divisor, total, stream);
}

void nll_bwd(DType t, const NllShape& s, bool fused, const void* log_probs, const int64_t* target,
             const void* weight, const void* grad, int64_t grad_stride, double scale, void* dx,
             Stream) {
  EMBER_DISPATCH_FLOAT(t, "nll_loss_backward", [&] {
    nll_grad<scalar_t>(s, fused, static_cast<const scalar_t*>(log_probs), target,
                       static_cast<const scalar_t*>(weight),
                       static_cast<const scalar_t*>(grad), grad_stride, scale,
                       static_cast<scalar_t*>(dx));
  });
}

size_t mse_workspace_bytes(int64_t) {
  return 0;
}

void mse_fwd(DType t, int64_t n, const void* x, const void* y, void* loss, double*, double divisor,
             void* total, Stream) {
  EMBER_DISPATCH_FLOAT(t, "mse_loss", [&] {
    const double sum = mse_sum<scalar_t>(n, static_cast<const scalar_t*>(x),
                                         static_cast<const scalar_t*>(y),
                                         static_cast<scalar_t*>(loss));
    if (total) *static_cast<scalar_t*>(total) = static_cast<scalar_t>(sum / divisor);
  });
}

void mse_bwd(DType t, int64_t n, const void* x, const void* y, const void* grad,
             int64_t grad_stride, double scale, void* dx, Stream) {
  EMBER_DISPATCH_FLOAT(t, "mse_loss_backward", [&] {
    mse_grad<scalar_t>(n, static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(y),
                       static_cast<const scalar_t*>(grad), grad_stride, scale,
                       static_cast<scalar_t*>(dx));
  });
}

}  // namespace ember::kernels::cpu

#include "kernels/cpu/loss.h"

#include <cmath>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {

namespace {

bool large(int64_t work) {
  return work >= kParallelGrain && !omp_in_parallel();
}

template <typename T>
double nll_fwd(const NllShape& sh, int64_t ignore, double eps, const T* lp, const int64_t* tgt,
               T* loss, int64_t* count) {
  const int64_t positions = sh.n * sh.s, c = sh.c, s = sh.s;
  double total = 0;
  int64_t kept = 0;
#pragma omp parallel for schedule(static) reduction(+ : total, kept) if (large(positions * c))
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t i = p / s, j = p % s, t = tgt[p];
    double l = 0;
    if (t != ignore) {
      const T* col = lp + i * c * s + j;
      l = -(1 - eps) * static_cast<double>(col[t * s]);
      if (eps > 0) {
        double sum = 0;
        for (int64_t k = 0; k < c; ++k) sum += col[k * s];
        l -= eps / static_cast<double>(c) * sum;
      }
      ++kept;
    }
    if (loss) loss[p] = static_cast<T>(l);
    total += l;
  }
  *count = kept;
  return total;
}

template <typename T>
void nll_bwd(const NllShape& sh, int64_t ignore, double eps, bool fused, const T* lp,
             const int64_t* tgt, const T* grad, int64_t gstride, double scale, T* dx) {
  const int64_t n = sh.n, c = sh.c, s = sh.s;
  const T smooth = static_cast<T>(eps / static_cast<double>(c));
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
        T v = fused ? g * (std::exp(li[k * s + j]) - smooth) : T(0);
        if (k == t) v -= fused ? g * static_cast<T>(1 - eps) : g;
        di[k * s + j] = v;
      }
    }
  }
}

template <typename T>
double mse_fwd(int64_t n, const T* x, const T* y, T* out) {
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
void mse_bwd(int64_t n, const T* x, const T* y, const T* grad, int64_t gstride, double scale,
             T* dx) {
  const T two = static_cast<T>(2 * scale);
  parallel_range(n, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) dx[i] = two * (x[i] - y[i]) * grad[i * gstride];
  });
}

}  // namespace

int64_t nll_find_bad_target_cpu(const NllShape& shape, int64_t ignore_index,
                                const int64_t* target) {
  const int64_t positions = shape.n * shape.s;
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t t = target[p];
    if (t != ignore_index && (t < 0 || t >= shape.c)) return p;
  }
  return -1;
}

double nll_fwd_cpu(DType t, const NllShape& shape, int64_t ignore_index, double smoothing,
                   const void* log_probs, const int64_t* target, void* loss, int64_t* count) {
  return EMBER_DISPATCH_FLOAT(t, "nll_loss", [&] {
    return nll_fwd<scalar_t>(shape, ignore_index, smoothing,
                             static_cast<const scalar_t*>(log_probs), target,
                             static_cast<scalar_t*>(loss), count);
  });
}

void nll_bwd_cpu(DType t, const NllShape& shape, int64_t ignore_index, double smoothing, bool fused,
                 const void* log_probs, const int64_t* target, const void* grad,
                 int64_t grad_stride, double scale, void* dx) {
  EMBER_DISPATCH_FLOAT(t, "nll_loss_backward", [&] {
    nll_bwd<scalar_t>(
        shape, ignore_index, smoothing, fused, static_cast<const scalar_t*>(log_probs), target,
        static_cast<const scalar_t*>(grad), grad_stride, scale, static_cast<scalar_t*>(dx));
  });
}

double mse_fwd_cpu(DType t, int64_t n, const void* x, const void* y, void* out) {
  return EMBER_DISPATCH_FLOAT(t, "mse_loss", [&] {
    return mse_fwd<scalar_t>(n, static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(y),
                             static_cast<scalar_t*>(out));
  });
}

void mse_bwd_cpu(DType t, int64_t n, const void* x, const void* y, const void* grad,
                 int64_t grad_stride, double scale, void* dx) {
  EMBER_DISPATCH_FLOAT(t, "mse_loss_backward", [&] {
    mse_bwd<scalar_t>(n, static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(y),
                      static_cast<const scalar_t*>(grad), grad_stride, scale,
                      static_cast<scalar_t*>(dx));
  });
}

}  // namespace ember::kernels::cpu

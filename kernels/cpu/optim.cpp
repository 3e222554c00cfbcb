#include "kernels/kernel_table.h"
#include "kernels/cpu/loops.h"

#include <cmath>

namespace ember::kernels::cpu {
namespace {

// A step the loss scaler skips (kernels/optim_shape.h, AmpStep).
bool skipped(const AmpStep& a) {
  return a.found_inf != nullptr && *a.found_inf != 0.0f;
}

// T is the storage type; the update computes in C = compute_t<T> and rounds once per store.
template <typename T, typename C = compute_t<T>>
void sgd_impl(T* p, const T* g, T* buf, int64_t n, const SgdParams& s) {
  if (skipped(s.amp)) return;
  const C lr = static_cast<C>(s.lr), wd = static_cast<C>(s.weight_decay);
  const C mom = static_cast<C>(s.momentum), damp = static_cast<C>(1.0 - s.dampening);
  const bool use_mom = s.momentum != 0.0;
  const bool first_step = s.amp.step ? *s.amp.step == 0.0 : s.first_step;
  const bool unscale = s.amp.grad_scale != nullptr;
  const C gs = unscale ? static_cast<C>(*s.amp.grad_scale) : C(1);
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const C w = static_cast<C>(p[i]);
    C d = unscale ? static_cast<C>(g[i]) / gs : static_cast<C>(g[i]);
    if (s.maximize) d = -d;
    if (s.weight_decay != 0.0) d += wd * w;
    if (use_mom) {
      const C b = first_step ? d : mom * static_cast<C>(buf[i]) + damp * d;
      buf[i] = T(b);
      d = s.nesterov ? d + mom * b : b;
    }
    p[i] = T(w - lr * d);
  }
}

template <typename T, typename C = compute_t<T>>
void adam_impl(T* p, const T* g, T* m, T* v, int64_t n, const AdamParams& s) {
  if (skipped(s.amp)) return;
  const double step = s.amp.step ? *s.amp.step + 1.0 : static_cast<double>(s.step);
  const double bc1 = 1.0 - std::pow(s.beta1, step);
  const double bc2 = 1.0 - std::pow(s.beta2, step);
  const C step_size = static_cast<C>(s.lr / bc1);
  const C bc2_sqrt = static_cast<C>(std::sqrt(bc2));
  const C b1 = static_cast<C>(s.beta1), b2 = static_cast<C>(s.beta2);
  const C one_b1 = static_cast<C>(1.0 - s.beta1), one_b2 = static_cast<C>(1.0 - s.beta2);
  const C eps = static_cast<C>(s.eps), wd = static_cast<C>(s.weight_decay);
  const C decay = static_cast<C>(1.0 - s.lr * s.weight_decay);
  const bool unscale = s.amp.grad_scale != nullptr;
  const C gs = unscale ? static_cast<C>(*s.amp.grad_scale) : C(1);
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    C grad = unscale ? static_cast<C>(g[i]) / gs : static_cast<C>(g[i]);
    if (s.maximize) grad = -grad;
    C w = static_cast<C>(p[i]);
    if (s.decoupled) {
      w *= decay;
    } else if (s.weight_decay != 0.0) {
      grad += wd * w;
    }
    const C mi = static_cast<C>(m[i]) * b1 + one_b1 * grad;
    const C vi = static_cast<C>(v[i]) * b2 + one_b2 * grad * grad;
    m[i] = T(mi);
    v[i] = T(vi);
    const C denom = std::sqrt(vi) / bc2_sqrt + eps;
    p[i] = T(w - step_size * (mi / denom));
  }
}

template <typename T, typename C = compute_t<T>>
void rmsprop_impl(T* p, const T* g, T* sq, T* ga, T* buf, int64_t n, const RmspropParams& s) {
  if (skipped(s.amp)) return;
  const C lr = static_cast<C>(s.lr), wd = static_cast<C>(s.weight_decay);
  const C alpha = static_cast<C>(s.alpha), one_alpha = static_cast<C>(1.0 - s.alpha);
  const C eps = static_cast<C>(s.eps), mom = static_cast<C>(s.momentum);
  const bool unscale = s.amp.grad_scale != nullptr;
  const C gs = unscale ? static_cast<C>(*s.amp.grad_scale) : C(1);
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const C w = static_cast<C>(p[i]);
    C d = unscale ? static_cast<C>(g[i]) / gs : static_cast<C>(g[i]);
    if (s.maximize) d = -d;
    if (s.weight_decay != 0.0) d += wd * w;
    const C sqi = alpha * static_cast<C>(sq[i]) + one_alpha * d * d;
    sq[i] = T(sqi);
    C avg;
    if (s.centered) {
      const C gai = alpha * static_cast<C>(ga[i]) + one_alpha * d;
      ga[i] = T(gai);
      avg = std::sqrt(sqi - gai * gai) + eps;
    } else {
      avg = std::sqrt(sqi) + eps;
    }
    if (s.momentum > 0.0) {
      const C b = mom * static_cast<C>(buf[i]) + d / avg;
      buf[i] = T(b);
      p[i] = T(w - lr * b);
    } else {
      p[i] = T(w - lr * (d / avg));
    }
  }
}

template <typename T, typename C = compute_t<T>>
void adagrad_impl(T* p, const T* g, T* sum, int64_t n, const AdagradParams& s) {
  if (skipped(s.amp)) return;
  const double step = s.amp.step ? *s.amp.step + 1.0 : static_cast<double>(s.step);
  const C clr = static_cast<C>(s.lr / (1.0 + (step - 1.0) * s.lr_decay));
  const C wd = static_cast<C>(s.weight_decay), eps = static_cast<C>(s.eps);
  const bool unscale = s.amp.grad_scale != nullptr;
  const C gs = unscale ? static_cast<C>(*s.amp.grad_scale) : C(1);
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const C w = static_cast<C>(p[i]);
    C d = unscale ? static_cast<C>(g[i]) / gs : static_cast<C>(g[i]);
    if (s.maximize) d = -d;
    if (s.weight_decay != 0.0) d += wd * w;
    const C si = static_cast<C>(sum[i]) + d * d;
    sum[i] = T(si);
    p[i] = T(w - clr * (d / (std::sqrt(si) + eps)));
  }
}

// The clip coefficient of a norm stored as N (kernels/optim_shape.h, clip_grad_scale).
template <typename N, typename C = compute_t<N>>
C clip_coef(const N* total_norm, double max_norm) {
  const C denom = static_cast<C>(N(static_cast<C>(*total_norm) + static_cast<C>(1e-6)));
  const C coef = static_cast<C>(N(static_cast<C>(max_norm) / denom));
  return coef > C(1) ? C(1) : coef;  // a NaN norm stays NaN, as torch.clamp keeps it
}

template <typename T, typename N>
void clip_scale_impl(T* g, int64_t n, const N* total_norm, double max_norm) {
  using C = compute_t<T>;
  const C coef = static_cast<C>(clip_coef(total_norm, max_norm));
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i) g[i] = T(static_cast<C>(g[i]) * coef);
}

}  // namespace

void sgd_step(DType t, void* p, const void* g, void* buf, int64_t n, const SgdParams& s, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "sgd_step", [&] {
    using T = scalar_t;
    sgd_impl(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(buf), n, s);
  });
}

void adam_step(DType t, void* p, const void* g, void* m, void* v, int64_t n, const AdamParams& s,
               Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "adam_step", [&] {
    using T = scalar_t;
    adam_impl(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m),
              static_cast<T*>(v), n, s);
  });
}

void rmsprop_step(DType t, void* p, const void* g, void* square_avg, void* grad_avg,
                  void* momentum_buffer, int64_t n, const RmspropParams& s, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "rmsprop_step", [&] {
    using T = scalar_t;
    rmsprop_impl(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(square_avg),
                 static_cast<T*>(grad_avg), static_cast<T*>(momentum_buffer), n, s);
  });
}

void adagrad_step(DType t, void* p, const void* g, void* sum, int64_t n, const AdagradParams& s,
                  Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "adagrad_step", [&] {
    using T = scalar_t;
    adagrad_impl(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(sum), n, s);
  });
}

void clip_grad_scale(DType t, void* g, int64_t n, DType norm_t, const void* total_norm,
                     double max_norm, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(norm_t, "clip_grad_scale", [&] {
    using N = scalar_t;
    EMBER_DISPATCH_FLOAT_HALF(t, "clip_grad_scale", [&] {
      using T = scalar_t;
      clip_scale_impl(static_cast<T*>(g), n, static_cast<const N*>(total_norm), max_norm);
    });
  });
}

}  // namespace ember::kernels::cpu

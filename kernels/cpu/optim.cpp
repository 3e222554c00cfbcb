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

}  // namespace ember::kernels::cpu

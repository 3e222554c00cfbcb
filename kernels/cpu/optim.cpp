#include "kernels/kernel_table.h"
#include "kernels/cpu/loops.h"

#include <cmath>

namespace ember::kernels::cpu {
namespace {

// A step the loss scaler skips (kernels/optim_shape.h, AmpStep).
bool skipped(const AmpStep& a) {
  return a.found_inf != nullptr && *a.found_inf != 0.0f;
}

template <typename T>
void sgd_impl(T* p, const T* g, T* buf, int64_t n, const SgdParams& s) {
  if (skipped(s.amp)) return;
  const T lr = static_cast<T>(s.lr), wd = static_cast<T>(s.weight_decay);
  const T mom = static_cast<T>(s.momentum), damp = static_cast<T>(1.0 - s.dampening);
  const bool use_mom = s.momentum != 0.0;
  const bool first_step = s.amp.step ? *s.amp.step == 0.0 : s.first_step;
  const bool unscale = s.amp.grad_scale != nullptr;
  const T gs = unscale ? static_cast<T>(*s.amp.grad_scale) : T(1);
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    T d = unscale ? g[i] / gs : g[i];
    if (s.weight_decay != 0.0) d += wd * p[i];
    if (use_mom) {
      T b = first_step ? d : mom * buf[i] + damp * d;
      buf[i] = b;
      d = s.nesterov ? d + mom * b : b;
    }
    p[i] -= lr * d;
  }
}

template <typename T>
void adam_impl(T* p, const T* g, T* m, T* v, int64_t n, const AdamParams& s) {
  if (skipped(s.amp)) return;
  const double step = s.amp.step ? *s.amp.step + 1.0 : static_cast<double>(s.step);
  const double bc1 = 1.0 - std::pow(s.beta1, step);
  const double bc2 = 1.0 - std::pow(s.beta2, step);
  const T step_size = static_cast<T>(s.lr / bc1);
  const T bc2_sqrt = static_cast<T>(std::sqrt(bc2));
  const T b1 = static_cast<T>(s.beta1), b2 = static_cast<T>(s.beta2);
  const T one_b1 = static_cast<T>(1.0 - s.beta1), one_b2 = static_cast<T>(1.0 - s.beta2);
  const T eps = static_cast<T>(s.eps), wd = static_cast<T>(s.weight_decay);
  const T decay = static_cast<T>(1.0 - s.lr * s.weight_decay);
  const bool unscale = s.amp.grad_scale != nullptr;
  const T gs = unscale ? static_cast<T>(*s.amp.grad_scale) : T(1);
#pragma omp parallel for if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    T grad = unscale ? g[i] / gs : g[i];
    if (s.decoupled) {
      p[i] *= decay;
    } else if (s.weight_decay != 0.0) {
      grad += wd * p[i];
    }
    m[i] = m[i] * b1 + one_b1 * grad;
    v[i] = v[i] * b2 + one_b2 * grad * grad;
    T denom = std::sqrt(v[i]) / bc2_sqrt + eps;
    p[i] -= step_size * (m[i] / denom);
  }
}

}  // namespace

void sgd_step(DType t, void* p, const void* g, void* buf, int64_t n, const SgdParams& s, Stream) {
  dispatch_float(t, "sgd_step", [&](auto z) {
    using T = decltype(z);
    sgd_impl(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(buf), n, s);
  });
}

void adam_step(DType t, void* p, const void* g, void* m, void* v, int64_t n, const AdamParams& s,
               Stream) {
  dispatch_float(t, "adam_step", [&](auto z) {
    using T = decltype(z);
    adam_impl(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m),
              static_cast<T*>(v), n, s);
  });
}

}  // namespace ember::kernels::cpu

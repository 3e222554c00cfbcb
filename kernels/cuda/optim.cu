// Fused SGD and Adam/AdamW updates: grid-stride loops, one read and one write of each buffer.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"

#include <cmath>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

// The scalar factors of an update in the compute type C, rounded once on the host (as the CPU
// kernels do). Half parameters and state are stored in T and computed in C = float (Note [Half
// storage]).
template <typename C>
struct SgdFactors {
  C lr, wd, mom, damp;
  bool use_wd, use_mom, nesterov, first_step;
  AmpStep amp;
};
template <typename C>
struct AdamFactors {
  C step_size, bc2_sqrt, b1, b2, one_b1, one_b2, eps, wd, decay;
  bool decoupled, use_wd;
  AmpStep amp;
  double lr, beta1, beta2;  // for the bias corrections of a device step count (amp.step)
};

// A step the loss scaler skips (kernels/optim_shape.h, AmpStep): every thread reads the flag.
__device__ bool skipped(const AmpStep& a) {
  return a.found_inf != nullptr && *a.found_inf != 0.0f;
}

template <typename T, typename C = compute_t<T>>
__global__ void sgd_step_kernel(SgdFactors<C> f, int64_t n, T* __restrict__ p,
                                const T* __restrict__ g, T* __restrict__ buf) {
  if (skipped(f.amp)) return;
  const bool first_step = f.amp.step ? *f.amp.step == 0.0 : f.first_step;
  const C gs = f.amp.grad_scale ? static_cast<C>(*f.amp.grad_scale) : C(1);
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const C w = static_cast<C>(p[i]);
    C d = f.amp.grad_scale ? static_cast<C>(g[i]) / gs : static_cast<C>(g[i]);
    if (f.use_wd) d += f.wd * w;
    if (f.use_mom) {
      const C b = first_step ? d : f.mom * static_cast<C>(buf[i]) + f.damp * d;
      buf[i] = narrow<T>(b);
      d = f.nesterov ? d + f.mom * b : b;
    }
    p[i] = narrow<T>(w - f.lr * d);
  }
}

template <typename T, typename C = compute_t<T>>
__global__ void adam_step_kernel(AdamFactors<C> f, int64_t n, T* __restrict__ p,
                                 const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v) {
  if (skipped(f.amp)) return;
  C step_size = f.step_size, bc2_sqrt = f.bc2_sqrt;
  if (f.amp.step) {  // the bias corrections of the device's step count, in double as the host's
    const double t = *f.amp.step + 1.0;
    step_size = static_cast<C>(f.lr / (1.0 - pow(f.beta1, t)));
    bc2_sqrt = static_cast<C>(sqrt(1.0 - pow(f.beta2, t)));
  }
  const C gs = f.amp.grad_scale ? static_cast<C>(*f.amp.grad_scale) : C(1);
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    C grad = f.amp.grad_scale ? static_cast<C>(g[i]) / gs : static_cast<C>(g[i]);
    C w = static_cast<C>(p[i]);
    if (f.decoupled)
      w *= f.decay;
    else if (f.use_wd)
      grad += f.wd * w;
    const C mi = static_cast<C>(m[i]) * f.b1 + f.one_b1 * grad;
    const C vi = static_cast<C>(v[i]) * f.b2 + f.one_b2 * grad * grad;
    m[i] = narrow<T>(mi);
    v[i] = narrow<T>(vi);
    const C denom = sqrt(vi) / bc2_sqrt + f.eps;
    p[i] = narrow<T>(w - step_size * (mi / denom));
  }
}

template <typename T, typename C = compute_t<T>>
void sgd_t(T* p, const T* g, T* buf, int64_t n, const SgdParams& s, gpu::Stream stream) {
  const SgdFactors<C> f{static_cast<C>(s.lr),
                        static_cast<C>(s.weight_decay),
                        static_cast<C>(s.momentum),
                        static_cast<C>(1.0 - s.dampening),
                        s.weight_decay != 0.0,
                        s.momentum != 0.0,
                        s.nesterov,
                        s.first_step,
                        s.amp};
  EMBER_LAUNCH(sgd_step_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, f, n, p, g, buf);
}

template <typename T, typename C = compute_t<T>>
void adam_t(T* p, const T* g, T* m, T* v, int64_t n, const AdamParams& s, gpu::Stream stream) {
  const double bc1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bc2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.step));
  const AdamFactors<C> f{static_cast<C>(s.lr / bc1),
                         static_cast<C>(std::sqrt(bc2)),
                         static_cast<C>(s.beta1),
                         static_cast<C>(s.beta2),
                         static_cast<C>(1.0 - s.beta1),
                         static_cast<C>(1.0 - s.beta2),
                         static_cast<C>(s.eps),
                         static_cast<C>(s.weight_decay),
                         static_cast<C>(1.0 - s.lr * s.weight_decay),
                         s.decoupled,
                         s.weight_decay != 0.0,
                         s.amp,
                         s.lr,
                         s.beta1,
                         s.beta2};
  EMBER_LAUNCH(adam_step_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, f, n, p, g, m, v);
}

}  // namespace

void sgd_step(DType t, void* p, const void* g, void* buf, int64_t n, const SgdParams& s,
              gpu::Stream stream) {
  if (n == 0) return;
  dispatch_float_half(t, "sgd_step", [&](auto z) {
    using T = decltype(z);
    sgd_t(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(buf), n, s, stream);
  });
}

void adam_step(DType t, void* p, const void* g, void* m, void* v, int64_t n, const AdamParams& s,
               gpu::Stream stream) {
  if (n == 0) return;
  dispatch_float_half(t, "adam_step", [&](auto z) {
    using T = decltype(z);
    adam_t(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m), static_cast<T*>(v), n,
           s, stream);
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

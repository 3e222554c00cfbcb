// Fused SGD, Adam/AdamW, RMSprop and Adagrad updates and the gradient clip's scaling: grid-stride
// loops, one read and one write of each buffer.
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
  bool use_wd, use_mom, nesterov, first_step, maximize;
  AmpStep amp;
};
template <typename C>
struct AdamFactors {
  C step_size, bc2_sqrt, b1, b2, one_b1, one_b2, eps, wd, decay;
  bool decoupled, use_wd, maximize;
  AmpStep amp;
  double lr, beta1, beta2;  // for the bias corrections of a device step count (amp.step)
};
template <typename C>
struct RmspropFactors {
  C lr, wd, alpha, one_alpha, eps, mom;
  bool use_wd, centered, use_mom, maximize;
  AmpStep amp;
};
template <typename C>
struct AdagradFactors {
  C clr, wd, eps;
  bool use_wd, maximize;
  AmpStep amp;
  double lr, lr_decay;  // for the decayed lr of a device step count (amp.step)
};

// Note [One instruction stream for scaled and plain steps]: every kernel divides the gradient by
// the loss scale, 1 for a plain step (x / 1 is x exactly), rather than branching on whether there
// is one. A branch let the compiler unswitch the loop and contract each copy's multiply-adds into
// FMAs its own way, so a scaled AdamW step differed from the plain one in the last bit on an H200.

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
    C d = static_cast<C>(g[i]) / gs;
    if (f.maximize) d = -d;
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
    C grad = static_cast<C>(g[i]) / gs;
    if (f.maximize) grad = -grad;
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
__global__ void rmsprop_step_kernel(RmspropFactors<C> f, int64_t n, T* __restrict__ p,
                                    const T* __restrict__ g, T* __restrict__ sq, T* __restrict__ ga,
                                    T* __restrict__ buf) {
  if (skipped(f.amp)) return;
  const C gs = f.amp.grad_scale ? static_cast<C>(*f.amp.grad_scale) : C(1);
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const C w = static_cast<C>(p[i]);
    C d = static_cast<C>(g[i]) / gs;
    if (f.maximize) d = -d;
    if (f.use_wd) d += f.wd * w;
    const C sqi = f.alpha * static_cast<C>(sq[i]) + f.one_alpha * d * d;
    sq[i] = narrow<T>(sqi);
    C avg;
    if (f.centered) {
      const C gai = f.alpha * static_cast<C>(ga[i]) + f.one_alpha * d;
      ga[i] = narrow<T>(gai);
      avg = sqrt(sqi - gai * gai) + f.eps;
    } else {
      avg = sqrt(sqi) + f.eps;
    }
    if (f.use_mom) {
      const C b = f.mom * static_cast<C>(buf[i]) + d / avg;
      buf[i] = narrow<T>(b);
      p[i] = narrow<T>(w - f.lr * b);
    } else {
      p[i] = narrow<T>(w - f.lr * (d / avg));
    }
  }
}

template <typename T, typename C = compute_t<T>>
__global__ void adagrad_step_kernel(AdagradFactors<C> f, int64_t n, T* __restrict__ p,
                                    const T* __restrict__ g, T* __restrict__ sum) {
  if (skipped(f.amp)) return;
  C clr = f.clr;
  if (f.amp.step)  // the decayed lr of the device's step count, in double as the host's
    clr = static_cast<C>(f.lr / (1.0 + *f.amp.step * f.lr_decay));
  const C gs = f.amp.grad_scale ? static_cast<C>(*f.amp.grad_scale) : C(1);
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const C w = static_cast<C>(p[i]);
    C d = static_cast<C>(g[i]) / gs;
    if (f.maximize) d = -d;
    if (f.use_wd) d += f.wd * w;
    const C si = static_cast<C>(sum[i]) + d * d;
    sum[i] = narrow<T>(si);
    p[i] = narrow<T>(w - clr * (d / (sqrt(si) + f.eps)));
  }
}

// clip_grad_scale (kernels/optim_shape.h): every thread computes the coefficient from the norm
// on the device (a few flops), so the clip needs no launch of its own for it.
template <typename T, typename N>
__global__ void clip_grad_scale_kernel(int64_t n, T* __restrict__ g, const N* __restrict__ norm,
                                       double max_norm) {
  using CN = compute_t<N>;
  using C = compute_t<T>;
  const CN denom = static_cast<CN>(narrow<N>(static_cast<CN>(*norm) + static_cast<CN>(1e-6)));
  const CN coef = static_cast<CN>(narrow<N>(static_cast<CN>(max_norm) / denom));
  const C c = static_cast<C>(coef > CN(1) ? CN(1) : coef);  // a NaN norm stays NaN, as clamp
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    g[i] = narrow<T>(static_cast<C>(g[i]) * c);
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
                        s.maximize,
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
                         s.maximize,
                         s.amp,
                         s.lr,
                         s.beta1,
                         s.beta2};
  EMBER_LAUNCH(adam_step_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, f, n, p, g, m, v);
}

template <typename T, typename C = compute_t<T>>
void rmsprop_t(T* p, const T* g, T* sq, T* ga, T* buf, int64_t n, const RmspropParams& s,
               gpu::Stream stream) {
  const RmspropFactors<C> f{static_cast<C>(s.lr),
                            static_cast<C>(s.weight_decay),
                            static_cast<C>(s.alpha),
                            static_cast<C>(1.0 - s.alpha),
                            static_cast<C>(s.eps),
                            static_cast<C>(s.momentum),
                            s.weight_decay != 0.0,
                            s.centered,
                            s.momentum > 0.0,
                            s.maximize,
                            s.amp};
  EMBER_LAUNCH(rmsprop_step_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, f, n, p, g, sq,
               ga, buf);
}

template <typename T, typename C = compute_t<T>>
void adagrad_t(T* p, const T* g, T* sum, int64_t n, const AdagradParams& s, gpu::Stream stream) {
  const double clr = s.lr / (1.0 + static_cast<double>(s.step - 1) * s.lr_decay);
  const AdagradFactors<C> f{static_cast<C>(clr),
                            static_cast<C>(s.weight_decay),
                            static_cast<C>(s.eps),
                            s.weight_decay != 0.0,
                            s.maximize,
                            s.amp,
                            s.lr,
                            s.lr_decay};
  EMBER_LAUNCH(adagrad_step_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, f, n, p, g,
               sum);
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

void rmsprop_step(DType t, void* p, const void* g, void* square_avg, void* grad_avg,
                  void* momentum_buffer, int64_t n, const RmspropParams& s, gpu::Stream stream) {
  if (n == 0) return;
  dispatch_float_half(t, "rmsprop_step", [&](auto z) {
    using T = decltype(z);
    rmsprop_t(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(square_avg),
              static_cast<T*>(grad_avg), static_cast<T*>(momentum_buffer), n, s, stream);
  });
}

void adagrad_step(DType t, void* p, const void* g, void* sum, int64_t n, const AdagradParams& s,
                  gpu::Stream stream) {
  if (n == 0) return;
  dispatch_float_half(t, "adagrad_step", [&](auto z) {
    using T = decltype(z);
    adagrad_t(static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(sum), n, s, stream);
  });
}

void clip_grad_scale(DType t, void* g, int64_t n, DType norm_t, const void* total_norm,
                     double max_norm, gpu::Stream stream) {
  if (n == 0) return;
  dispatch_float_half(norm_t, "clip_grad_scale", [&](auto zn) {
    using N = decltype(zn);
    dispatch_float_half(t, "clip_grad_scale", [&](auto z) {
      using T = decltype(z);
      auto* kernel = clip_grad_scale_kernel<T, N>;
      EMBER_LAUNCH(kernel, dim3(blocks_for(n)), dim3(kBlock), 0, stream, n, static_cast<T*>(g),
                   static_cast<const N*>(total_norm), max_norm);
    });
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

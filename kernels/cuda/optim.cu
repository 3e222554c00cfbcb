// Fused SGD and Adam/AdamW updates: grid-stride loops, one read and one write of each buffer.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

// The scalar factors of an update, rounded to T once on the host (as the CPU kernels do).
template <typename T>
struct SgdFactors {
  T lr, wd, mom, damp;
  bool use_wd, use_mom, nesterov, first_step;
  AmpStep amp;
};
template <typename T>
struct AdamFactors {
  T step_size, bc2_sqrt, b1, b2, one_b1, one_b2, eps, wd, decay;
  bool decoupled, use_wd;
  AmpStep amp;
  double lr, beta1, beta2;  // for the bias corrections of a device step count (amp.step)
};

// A step the loss scaler skips (kernels/optim_shape.h, AmpStep): every thread reads the flag.
__device__ bool skipped(const AmpStep& a) {
  return a.found_inf != nullptr && *a.found_inf != 0.0f;
}

template <typename T>
__global__ void sgd_step_kernel(SgdFactors<T> f, int64_t n, T* __restrict__ p,
                                const T* __restrict__ g, T* __restrict__ buf) {
  if (skipped(f.amp)) return;
  const bool first_step = f.amp.step ? *f.amp.step == 0.0 : f.first_step;
  const T gs = f.amp.grad_scale ? static_cast<T>(*f.amp.grad_scale) : T(1);
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    T d = f.amp.grad_scale ? g[i] / gs : g[i];
    if (f.use_wd) d += f.wd * p[i];
    if (f.use_mom) {
      const T b = first_step ? d : f.mom * buf[i] + f.damp * d;
      buf[i] = b;
      d = f.nesterov ? d + f.mom * b : b;
    }
    p[i] -= f.lr * d;
  }
}

template <typename T>
__global__ void adam_step_kernel(AdamFactors<T> f, int64_t n, T* __restrict__ p,
                                 const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v) {
  if (skipped(f.amp)) return;
  T step_size = f.step_size, bc2_sqrt = f.bc2_sqrt;
  if (f.amp.step) {  // the bias corrections of the device's step count, in double as the host's
    const double t = *f.amp.step + 1.0;
    step_size = static_cast<T>(f.lr / (1.0 - pow(f.beta1, t)));
    bc2_sqrt = static_cast<T>(sqrt(1.0 - pow(f.beta2, t)));
  }
  const T gs = f.amp.grad_scale ? static_cast<T>(*f.amp.grad_scale) : T(1);
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    T grad = f.amp.grad_scale ? g[i] / gs : g[i];
    T w = p[i];
    if (f.decoupled)
      w *= f.decay;
    else if (f.use_wd)
      grad += f.wd * w;
    const T mi = m[i] * f.b1 + f.one_b1 * grad;
    const T vi = v[i] * f.b2 + f.one_b2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    const T denom = sqrt(vi) / bc2_sqrt + f.eps;
    p[i] = w - step_size * (mi / denom);
  }
}

template <typename T>
void sgd_t(T* p, const T* g, T* buf, int64_t n, const SgdParams& s, gpu::Stream stream) {
  const SgdFactors<T> f{static_cast<T>(s.lr),
                        static_cast<T>(s.weight_decay),
                        static_cast<T>(s.momentum),
                        static_cast<T>(1.0 - s.dampening),
                        s.weight_decay != 0.0,
                        s.momentum != 0.0,
                        s.nesterov,
                        s.first_step,
                        s.amp};
  EMBER_LAUNCH(sgd_step_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, f, n, p, g, buf);
}

template <typename T>
void adam_t(T* p, const T* g, T* m, T* v, int64_t n, const AdamParams& s,
            gpu::Stream stream) {
  const double bc1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bc2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.step));
  const AdamFactors<T> f{static_cast<T>(s.lr / bc1),
                         static_cast<T>(std::sqrt(bc2)),
                         static_cast<T>(s.beta1),
                         static_cast<T>(s.beta2),
                         static_cast<T>(1.0 - s.beta1),
                         static_cast<T>(1.0 - s.beta2),
                         static_cast<T>(s.eps),
                         static_cast<T>(s.weight_decay),
                         static_cast<T>(1.0 - s.lr * s.weight_decay),
                         s.decoupled,
                         s.weight_decay != 0.0,
                         s.amp,
                         s.lr,
                         s.beta1,
                         s.beta2};
  EMBER_LAUNCH(adam_step_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, f, n, p, g, m, v);
}

void require_float(DType t, const char* what) {
  if (t != DType::f32 && t != DType::f64)
    throw std::invalid_argument(std::string(what) + ": only float32 and float64 kernels exist");
}

}  // namespace

void sgd_step(DType t, void* p, const void* g, void* buf, int64_t n, const SgdParams& s,
              gpu::Stream stream) {
  require_float(t, "sgd_step");
  if (n == 0) return;
  if (t == DType::f32)
    sgd_t(static_cast<float*>(p), static_cast<const float*>(g), static_cast<float*>(buf), n, s,
          stream);
  else
    sgd_t(static_cast<double*>(p), static_cast<const double*>(g), static_cast<double*>(buf), n, s,
          stream);
}

void adam_step(DType t, void* p, const void* g, void* m, void* v, int64_t n,
               const AdamParams& s, gpu::Stream stream) {
  require_float(t, "adam_step");
  if (n == 0) return;
  if (t == DType::f32)
    adam_t(static_cast<float*>(p), static_cast<const float*>(g), static_cast<float*>(m),
           static_cast<float*>(v), n, s, stream);
  else
    adam_t(static_cast<double*>(p), static_cast<const double*>(g), static_cast<double*>(m),
           static_cast<double*>(v), n, s, stream);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

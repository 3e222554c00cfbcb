// Activations: grid-stride loops over contiguous data, float4 loads and stores for aligned
// float32 buffers. The activation is a uniform runtime switch (every thread takes the same
// branch), so one kernel per dtype serves all of them; the formulas are kernels/cpu/activation's.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"

#include <cmath>
#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using gpu_types::ActKind;
using gpu_types::ActParams;
using gpu_types::Scalar;
using namespace detail;

constexpr double kSqrt1_2 = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kSqrt2_Pi = 0.79788456080286535588;    // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

// The parameters in T, converted once per launch rather than per element.
template <typename T>
struct Params {
  T alpha, beta, threshold;
};

template <typename T>
__device__ __forceinline__ T act_fwd(ActKind a, const Params<T>& p, T x) {
  switch (a) {
    case ActKind::relu:
      return x > T(0) ? x : T(0);
    case ActKind::leaky_relu:
      return x > T(0) ? x : x * p.alpha;
    case ActKind::sigmoid:
      return T(1) / (T(1) + exp(-x));
    case ActKind::tanh:
      return tanh(x);
    case ActKind::gelu:
      return x * T(0.5) * (T(1) + erf(x * T(kSqrt1_2)));
    case ActKind::gelu_tanh: {
      const T inner = T(kSqrt2_Pi) * (x + T(kGeluC) * x * x * x);
      return T(0.5) * x * (T(1) + tanh(inner));
    }
    case ActKind::silu:
      return x / (T(1) + exp(-x));
    case ActKind::elu:
      return x > T(0) ? x : p.alpha * expm1(x);
    case ActKind::softplus: {
      const T bx = x * p.beta;
      return bx > p.threshold ? x : log1p(exp(bx)) / p.beta;
    }
  }
  return x;
}

// g * act'(.), with s = y (sigmoid, tanh) or x.
template <typename T>
__device__ __forceinline__ T act_bwd(ActKind a, const Params<T>& p, T s, T g) {
  switch (a) {
    case ActKind::relu:
      return s > T(0) ? g : T(0);
    case ActKind::leaky_relu:
      return s > T(0) ? g : g * p.alpha;
    case ActKind::sigmoid:
      return g * s * (T(1) - s);
    case ActKind::tanh:
      return g * (T(1) - s * s);
    case ActKind::gelu: {
      const T cdf = T(0.5) * (T(1) + erf(s * T(kSqrt1_2)));
      const T pdf = T(kInvSqrt2Pi) * exp(T(-0.5) * s * s);
      return g * (cdf + s * pdf);
    }
    case ActKind::gelu_tanh: {
      const T x2 = s * s;
      const T th = tanh(T(kSqrt2_Pi) * (s + T(kGeluC) * x2 * s));
      const T dinner = T(kSqrt2_Pi) * (T(1) + T(3) * T(kGeluC) * x2);
      return g * (T(0.5) * (T(1) + th) + T(0.5) * s * (T(1) - th * th) * dinner);
    }
    case ActKind::silu: {
      const T sig = T(1) / (T(1) + exp(-s));
      return g * sig * (T(1) + s * (T(1) - sig));
    }
    case ActKind::elu:
      return s > T(0) ? g : g * p.alpha * exp(s);
    case ActKind::softplus: {
      const T bx = s * p.beta;
      if (bx > p.threshold) return g;
      const T z = exp(bx);
      return g * z / (z + T(1));
    }
  }
  return g;
}

template <typename T>
__global__ void activation_fwd_kernel(ActKind a, Params<T> p, int64_t n, const T* __restrict__ x,
                                      T* __restrict__ y) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] = act_fwd(a, p, x[i]);
}

template <typename T>
__global__ void activation_bwd_kernel(ActKind a, Params<T> p, int64_t n, const T* __restrict__ s,
                                      const T* __restrict__ dy, T* __restrict__ dx) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) dx[i] = act_bwd(a, p, s[i], dy[i]);
}

// float32 with every buffer 16-byte aligned: four elements per load and store, then the tail.
__global__ void activation_fwd_vec4_kernel(ActKind a, Params<float> p, int64_t n,
                                           const float* __restrict__ x, float* __restrict__ y) {
  const int64_t nv = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    const float4 v = x4[i];
    y4[i] =
        make_float4(act_fwd(a, p, v.x), act_fwd(a, p, v.y), act_fwd(a, p, v.z), act_fwd(a, p, v.w));
  }
  for (int64_t i = nv * 4 + global_thread(); i < n; i += grid_threads()) y[i] = act_fwd(a, p, x[i]);
}

__global__ void activation_bwd_vec4_kernel(ActKind a, Params<float> p, int64_t n,
                                           const float* __restrict__ s,
                                           const float* __restrict__ dy, float* __restrict__ dx) {
  const int64_t nv = n / 4;
  const float4* s4 = reinterpret_cast<const float4*>(s);
  const float4* g4 = reinterpret_cast<const float4*>(dy);
  float4* d4 = reinterpret_cast<float4*>(dx);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    const float4 v = s4[i], g = g4[i];
    d4[i] = make_float4(act_bwd(a, p, v.x, g.x), act_bwd(a, p, v.y, g.y), act_bwd(a, p, v.z, g.z),
                        act_bwd(a, p, v.w, g.w));
  }
  for (int64_t i = nv * 4 + global_thread(); i < n; i += grid_threads())
    dx[i] = act_bwd(a, p, s[i], dy[i]);
}

bool aligned16(const void* q) {
  return reinterpret_cast<uintptr_t>(q) % 16 == 0;
}

template <typename T>
Params<T> params_in(const ActParams& p) {
  return {static_cast<T>(p.alpha), static_cast<T>(p.beta), static_cast<T>(p.threshold)};
}

void check_float(Scalar t, const char* what) {
  if (t != Scalar::f32 && t != Scalar::f64)
    throw std::invalid_argument(std::string(what) + ": kernels exist for float32 and float64 only");
}

}  // namespace

void activation_fwd(ActKind act, Scalar t, const ActParams& p, int64_t n, const void* x, void* y,
                    gpu::Stream stream) {
  check_float(t, "activation_fwd");
  if (n == 0) return;
  if (t == Scalar::f64) {
    EMBER_LAUNCH(activation_fwd_kernel<double>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act,
                 params_in<double>(p), n, static_cast<const double*>(x), static_cast<double*>(y));
  } else if (aligned16(x) && aligned16(y)) {
    EMBER_LAUNCH(activation_fwd_vec4_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0, stream,
                 act, params_in<float>(p), n, static_cast<const float*>(x), static_cast<float*>(y));
  } else {
    EMBER_LAUNCH(activation_fwd_kernel<float>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act,
                 params_in<float>(p), n, static_cast<const float*>(x), static_cast<float*>(y));
  }
}

void activation_bwd(ActKind act, Scalar t, const ActParams& p, int64_t n, const void* saved,
                    const void* dy, void* dx, gpu::Stream stream) {
  check_float(t, "activation_bwd");
  if (n == 0) return;
  if (t == Scalar::f64) {
    EMBER_LAUNCH(activation_bwd_kernel<double>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act,
                 params_in<double>(p), n, static_cast<const double*>(saved),
                 static_cast<const double*>(dy), static_cast<double*>(dx));
  } else if (aligned16(saved) && aligned16(dy) && aligned16(dx)) {
    EMBER_LAUNCH(activation_bwd_vec4_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0, stream,
                 act, params_in<float>(p), n, static_cast<const float*>(saved),
                 static_cast<const float*>(dy), static_cast<float*>(dx));
  } else {
    EMBER_LAUNCH(activation_bwd_kernel<float>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act,
                 params_in<float>(p), n, static_cast<const float*>(saved),
                 static_cast<const float*>(dy), static_cast<float*>(dx));
  }
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

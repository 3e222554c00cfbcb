// Activations: grid-stride loops over contiguous data, float4 loads and stores for aligned
// float32 buffers, pairs for aligned float16/bfloat16 ones (computed in float). The activation is a
// uniform runtime switch (every thread takes the same branch), so one kernel per dtype serves all
// of them; the formulas are kernels/activation_math.h's, which the CPU kernels share.
#include "kernels/activation_math.h"
#include "kernels/kernel_table.h"
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"

#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

// Half types compute in float (C = compute_t<T>) and round on store.
template <typename T, typename C = compute_t<T>>
__global__ void activation_fwd_kernel(Activation a, ActivationCoeffs<C> p, int64_t n,
                                      const T* __restrict__ x, T* __restrict__ y) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    y[i] = static_cast<T>(activation_value(a, p, C(x[i])));
}

template <typename T, typename C = compute_t<T>>
__global__ void activation_bwd_kernel(Activation a, ActivationCoeffs<C> p, int64_t n,
                                      const T* __restrict__ s, const T* __restrict__ dy,
                                      T* __restrict__ dx) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    dx[i] = static_cast<T>(activation_grad(a, p, C(s[i]), C(dy[i])));
}

// A half type with every buffer 4-byte aligned: two elements per load and store.
template <typename T>
__global__ void activation_fwd_vec2_kernel(Activation a, ActivationCoeffs<float> p, int64_t n,
                                           const T* __restrict__ x, T* __restrict__ y) {
  using T2 = pair_t<T>;
  const int64_t nv = n / 2;
  const T2* x2 = reinterpret_cast<const T2*>(x);
  T2* y2 = reinterpret_cast<T2*>(y);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    const T2 v = x2[i];
    T2 r;
    r.x = T(activation_value(a, p, float(v.x)));
    r.y = T(activation_value(a, p, float(v.y)));
    y2[i] = r;
  }
  for (int64_t i = nv * 2 + global_thread(); i < n; i += grid_threads())
    y[i] = T(activation_value(a, p, float(x[i])));
}

// float32 with every buffer 16-byte aligned: four elements per load and store, then the tail.
__global__ void activation_fwd_vec4_kernel(Activation a, ActivationCoeffs<float> p, int64_t n,
                                           const float* __restrict__ x, float* __restrict__ y) {
  const int64_t nv = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    const float4 v = x4[i];
    y4[i] = make_float4(activation_value(a, p, v.x), activation_value(a, p, v.y),
                        activation_value(a, p, v.z), activation_value(a, p, v.w));
  }
  for (int64_t i = nv * 4 + global_thread(); i < n; i += grid_threads())
    y[i] = activation_value(a, p, x[i]);
}

__global__ void activation_bwd_vec4_kernel(Activation a, ActivationCoeffs<float> p, int64_t n,
                                           const float* __restrict__ s,
                                           const float* __restrict__ dy, float* __restrict__ dx) {
  const int64_t nv = n / 4;
  const float4* s4 = reinterpret_cast<const float4*>(s);
  const float4* g4 = reinterpret_cast<const float4*>(dy);
  float4* d4 = reinterpret_cast<float4*>(dx);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    const float4 v = s4[i], g = g4[i];
    d4[i] = make_float4(activation_grad(a, p, v.x, g.x), activation_grad(a, p, v.y, g.y),
                        activation_grad(a, p, v.z, g.z), activation_grad(a, p, v.w, g.w));
  }
  for (int64_t i = nv * 4 + global_thread(); i < n; i += grid_threads())
    dx[i] = activation_grad(a, p, s[i], dy[i]);
}

bool aligned16(const void* q) {
  return reinterpret_cast<uintptr_t>(q) % 16 == 0;
}
bool aligned4(const void* q) {
  return reinterpret_cast<uintptr_t>(q) % 4 == 0;
}

template <typename T>
void activation_fwd_t(Activation act, const ActivationParams& prm, int64_t n, const T* x, T* y,
                      gpu::Stream stream) {
  using C = compute_t<T>;
  const ActivationCoeffs<C> p = activation_coeffs<C>(prm);
  if constexpr (std::is_same_v<T, float>) {
    if (aligned16(x) && aligned16(y)) {
      EMBER_LAUNCH(activation_fwd_vec4_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0,
                   stream, act, p, n, x, y);
      return;
    }
  }
  if constexpr (kIsHalf<T>) {
    if (aligned4(x) && aligned4(y)) {
      EMBER_LAUNCH(activation_fwd_vec2_kernel<T>, dim3(blocks_for((n + 1) / 2)), dim3(kBlock), 0,
                   stream, act, p, n, x, y);
      return;
    }
  }
  EMBER_LAUNCH(activation_fwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act, p, n, x,
               y);
}

template <typename T>
void activation_bwd_t(Activation act, const ActivationParams& prm, int64_t n, const T* s,
                      const T* dy, T* dx, gpu::Stream stream) {
  using C = compute_t<T>;
  const ActivationCoeffs<C> p = activation_coeffs<C>(prm);
  if constexpr (std::is_same_v<T, float>) {
    if (aligned16(s) && aligned16(dy) && aligned16(dx)) {
      EMBER_LAUNCH(activation_bwd_vec4_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0,
                   stream, act, p, n, s, dy, dx);
      return;
    }
  }
  EMBER_LAUNCH(activation_bwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act, p, n, s,
               dy, dx);
}

}  // namespace

void activation_fwd(Activation act, DType t, const ActivationParams& p, int64_t n, const void* x,
                    void* y, gpu::Stream stream) {
  dispatch_float_half(t, "activation_fwd", [&](auto zero) {
    using T = decltype(zero);
    if (n > 0) activation_fwd_t<T>(act, p, n, static_cast<const T*>(x), static_cast<T*>(y), stream);
  });
}

void activation_bwd(Activation act, DType t, const ActivationParams& p, int64_t n,
                    const void* saved, const void* dy, void* dx, gpu::Stream stream) {
  dispatch_float_half(t, "activation_bwd", [&](auto zero) {
    using T = decltype(zero);
    if (n > 0)
      activation_bwd_t<T>(act, p, n, static_cast<const T*>(saved), static_cast<const T*>(dy),
                          static_cast<T*>(dx), stream);
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

// Activations: grid-stride loops over contiguous data, float4 loads and stores for aligned
// float32 buffers. The activation is a uniform runtime switch (every thread takes the same
// branch), so one kernel per dtype serves all of them; the formulas are
// kernels/activation_math.h's, which the CPU kernels share.
#include "kernels/activation_math.h"
#include "kernels/kernel_table.h"
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"

#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

template <typename T>
__global__ void activation_fwd_kernel(Activation a, ActivationCoeffs<T> p, int64_t n,
                                      const T* __restrict__ x, T* __restrict__ y) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) y[i] = activation_value(a, p, x[i]);
}

template <typename T>
__global__ void activation_bwd_kernel(Activation a, ActivationCoeffs<T> p, int64_t n,
                                      const T* __restrict__ s, const T* __restrict__ dy,
                                      T* __restrict__ dx) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    dx[i] = activation_grad(a, p, s[i], dy[i]);
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

void check_float(DType t, const char* what) {
  if (t != DType::f32 && t != DType::f64)
    throw std::invalid_argument(std::string(what) + ": kernels exist for float32 and float64 only");
}

}  // namespace

void activation_fwd(Activation act, DType t, const ActivationParams& p, int64_t n, const void* x,
                    void* y, gpu::Stream stream) {
  check_float(t, "activation_fwd");
  if (n == 0) return;
  if (t == DType::f64) {
    EMBER_LAUNCH(activation_fwd_kernel<double>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act,
                 activation_coeffs<double>(p), n, static_cast<const double*>(x),
                 static_cast<double*>(y));
  } else if (aligned16(x) && aligned16(y)) {
    EMBER_LAUNCH(activation_fwd_vec4_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0, stream,
                 act, activation_coeffs<float>(p), n, static_cast<const float*>(x),
                 static_cast<float*>(y));
  } else {
    EMBER_LAUNCH(activation_fwd_kernel<float>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act,
                 activation_coeffs<float>(p), n, static_cast<const float*>(x),
                 static_cast<float*>(y));
  }
}

void activation_bwd(Activation act, DType t, const ActivationParams& p, int64_t n,
                    const void* saved, const void* dy, void* dx, gpu::Stream stream) {
  check_float(t, "activation_bwd");
  if (n == 0) return;
  if (t == DType::f64) {
    EMBER_LAUNCH(activation_bwd_kernel<double>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act,
                 activation_coeffs<double>(p), n, static_cast<const double*>(saved),
                 static_cast<const double*>(dy), static_cast<double*>(dx));
  } else if (aligned16(saved) && aligned16(dy) && aligned16(dx)) {
    EMBER_LAUNCH(activation_bwd_vec4_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0, stream,
                 act, activation_coeffs<float>(p), n, static_cast<const float*>(saved),
                 static_cast<const float*>(dy), static_cast<float*>(dx));
  } else {
    EMBER_LAUNCH(activation_bwd_kernel<float>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, act,
                 activation_coeffs<float>(p), n, static_cast<const float*>(saved),
                 static_cast<const float*>(dy), static_cast<float*>(dx));
  }
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

// The loss scaler's kernels on a GPU (kernels/amp_shape.h): a grid-stride check-and-unscale whose
// found-inf flag is written only with 1 (a benign race, as PyTorch's), and one-thread updates of
// the scale, its growth tracker and an optimiser's step count, all on the device.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"

#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

// Neither inf nor NaN: v - v is 0 exactly then, NaN otherwise (the same on nvcc and the emulator).
template <typename T>
__host__ __device__ bool finite(T v) {
  return v - v == T(0);
}

// Half gradients are multiplied in float and rounded once (Note [Half storage]).
template <typename T, typename C = compute_t<T>>
__global__ void amp_unscale_kernel(T* g, int64_t n, float* found_inf, const float* scale) {
  const float inv = scale ? static_cast<float>(1.0 / static_cast<double>(*scale)) : 1.0f;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const C v = static_cast<C>(g[i]);
    if (!finite(v)) *found_inf = 1.0f;
    if (inv != 1.0f) g[i] = narrow<T>(v * static_cast<C>(inv));
  }
}

__global__ void amp_update_scale_kernel(float* scale, int32_t* tracker, const float* found_inf,
                                        double growth, double backoff, int64_t interval) {
  if (*found_inf != 0.0f) {
    *scale = static_cast<float>(*scale * backoff);
    *tracker = 0;
    return;
  }
  const int64_t s = static_cast<int64_t>(*tracker) + 1;
  if (s == interval) {
    const float grown = static_cast<float>(*scale * growth);
    if (finite(grown)) *scale = grown;
    *tracker = 0;
  } else {
    *tracker = static_cast<int32_t>(s);
  }
}

__global__ void amp_count_step_kernel(double* step, const float* found_inf) {
  if (found_inf == nullptr || *found_inf == 0.0f) *step += 1;
}

}  // namespace

void amp_unscale(DType t, void* g, int64_t n, float* found_inf, const float* scale,
                 gpu::Stream stream) {
  if (n == 0) return;
  dispatch_float_half(t, "amp_unscale", [&](auto z) {
    using T = decltype(z);
    EMBER_LAUNCH(amp_unscale_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream,
                 static_cast<T*>(g), n, found_inf, scale);
  });
}

void amp_update_scale(float* scale, int32_t* tracker, const float* found_inf, double growth,
                      double backoff, int64_t interval, gpu::Stream stream) {
  EMBER_LAUNCH(amp_update_scale_kernel, dim3(1), dim3(1), 0, stream, scale, tracker, found_inf,
               growth, backoff, interval);
}

void amp_count_step(double* step, const float* found_inf, gpu::Stream stream) {
  EMBER_LAUNCH(amp_count_step_kernel, dim3(1), dim3(1), 0, stream, step, found_inf);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

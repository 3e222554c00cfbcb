// Random fills: one Philox4x32-10 block per element's group of four, the same arithmetic as the
// CPU fills (runtime/rng.cpp), with rounding pinned where nvcc would otherwise contract to FMA.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"

#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

// a + b * c, rounded after the product and after the sum, as the CPU computes it (g++ does not
// contract; nvcc would fuse it into one FMA).
__device__ __forceinline__ double mul_add_rounded(double a, double b, double c) {
#if EMBER_EMULATED
  return a + b * c;
#else
  return __dadd_rn(a, __dmul_rn(b, c));
#endif
}

template <typename T>
__global__ void random_fill_kernel(RandomDist dist, int64_t n, T* __restrict__ out, uint64_t seed,
                                   uint64_t offset, double a, double b) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const uint64_t u = static_cast<uint64_t>(i);
    double v;
    if (dist == RandomDist::Uniform) {
      v = mul_add_rounded(a, b - a,
                          static_cast<double>(philox_uniform(philox_word(seed, offset, u))));
    } else if (dist == RandomDist::Bernoulli) {
      v = static_cast<double>(philox_uniform(philox_word(seed, offset, u))) < a ? 1.0 : 0.0;
    } else {
      const uint64_t base = u & ~uint64_t{1};
      const float u1 = philox_uniform_open0(philox_word(seed, offset, base));
      const float u2 = philox_uniform(philox_word(seed, offset, base + 1));
      const float r = sqrtf(-2.0f * logf(u1));
      const float th = 6.2831853071795864f * u2;
      const float z = (i & 1) ? r * sinf(th) : r * cosf(th);
      v = mul_add_rounded(a, b, static_cast<double>(z));
    }
    out[i] = static_cast<T>(v);
  }
}

}  // namespace

void random_fill(RandomDist dist, DType t, int64_t n, void* out, uint64_t seed, uint64_t offset,
                 double a, double b, gpu::Stream stream) {
  if (t != DType::f32 && t != DType::f64)
    throw std::invalid_argument("random_fill: only float32 and float64 kernels exist");
  if (n == 0) return;
  if (t == DType::f32)
    EMBER_LAUNCH(random_fill_kernel<float>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, dist, n,
                 static_cast<float*>(out), seed, offset, a, b);
  else
    EMBER_LAUNCH(random_fill_kernel<double>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, dist, n,
                 static_cast<double*>(out), seed, offset, a, b);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

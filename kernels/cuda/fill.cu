// Elementwise fill and add: grid-stride loops over float buffers.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/fill.cuh"

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 4096;

__global__ void fill_f32_kernel(float* __restrict__ y, float value, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = value;
}

__global__ void add_f32_kernel(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ y, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = a[i] + b[i];
}

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

}  // namespace

void fill_f32(float* y, float value, int64_t n, gpu::Stream stream) {
  if (n == 0) return;
  EMBER_LAUNCH(fill_f32_kernel, dim3(blocks_for(n)), dim3(kBlock), 0, stream, y, value, n);
}

void add_f32(const float* a, const float* b, float* y, int64_t n, gpu::Stream stream) {
  if (n == 0) return;
  EMBER_LAUNCH(add_f32_kernel, dim3(blocks_for(n)), dim3(kBlock), 0, stream, a, b, y, n);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

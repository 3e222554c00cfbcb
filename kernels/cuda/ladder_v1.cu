// "Version 1" of GEMM, convolution, sum reduction and batch norm: each op written the way a
// textbook writes it first -- one thread per output reading global memory, or a shared-memory
// tree -- with nothing tuned. bench/bench_ladder times them under Ember's dispatched kernels and
// the vendor libraries; README.md, "Benchmarks", says what each later rung does better. GEMM has
// a second rung here too: the shared-memory tiling every faster GEMM starts from.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/ladder_v1.cuh"

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

constexpr int kTile = 16;   // GEMM: 16 x 16 threads per block
constexpr int kTree = 256;  // threads per block of the reductions and of conv; a power of two

// c[row, col] = sum_p a[row, p] * b[p, col]: threadIdx.x runs along a row of c, so a warp reads
// one a[row, p] (a broadcast) and 32 consecutive b[p, col] per step.
__global__ void gemm_v1_kernel(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                               float* c) {
  const int64_t row = int64_t(blockIdx.y) * blockDim.y + threadIdx.y;
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int64_t p = 0; p < k; ++p) acc += a[row * k + p] * b[p * n + col];
  c[row * n + col] = acc;
}

// The same c, a 16 x 16 tile per block: the block stages 16 x 16 tiles of a and b in shared
// memory, one element per thread each, and every thread then reads its row of a's tile and its
// column of b's tile from there: each value loaded from global memory serves 16 multiply-adds.
__global__ void gemm_v2_kernel(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                               float* c) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t row = int64_t(blockIdx.y) * kTile + ty, col = int64_t(blockIdx.x) * kTile + tx;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += kTile) {
    as[ty][tx] = row < m && k0 + tx < k ? a[row * k + k0 + tx] : 0.0f;
    bs[ty][tx] = k0 + ty < k && col < n ? b[(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int p = 0; p < kTile; ++p) acc += as[ty][p] * bs[p][tx];
    __syncthreads();  // the tiles are overwritten by the next step
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

// y[o] for output o = ((img * K + f) * OH + i) * OW + j: the direct sum over the filter's
// input channels and taps, skipping taps that fall in the padding.
__global__ void conv2d_fwd_v1_kernel(ConvShape s, int64_t total, const float* x, const float* w,
                                     float* y) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= total) return;
  const int64_t j = o % s.ow, i = (o / s.ow) % s.oh;
  const int64_t f = (o / (s.ow * s.oh)) % s.k, img = o / (s.ow * s.oh * s.k);
  const int64_t cg = s.c / s.groups, c0 = f / (s.k / s.groups) * cg;
  float acc = 0.0f;
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t r = 0; r < s.r; ++r) {
      const int64_t ih = i * s.stride_h - s.pad_h + r * s.dil_h;
      if (ih < 0 || ih >= s.h) continue;
      for (int64_t q = 0; q < s.s; ++q) {
        const int64_t iw = j * s.stride_w - s.pad_w + q * s.dil_w;
        if (iw < 0 || iw >= s.w) continue;
        acc +=
            x[((img * s.c + c0 + c) * s.h + ih) * s.w + iw] * w[((f * cg + c) * s.r + r) * s.s + q];
      }
    }
  y[o] = acc;
}

// The sum of the block's kTree values of `cache` by halving: at each level thread t < half adds
// cache[t + half] into cache[t]. Every thread gets the sum.
__device__ float tree_sum(float v, float* cache) {
  cache[threadIdx.x] = v;
  __syncthreads();
  for (int half = kTree / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) cache[threadIdx.x] += cache[threadIdx.x + half];
    __syncthreads();
  }
  const float total = cache[0];
  __syncthreads();  // cache[] is reused by the next call
  return total;
}

// out[b] = the sum of in[b * kTree .. (b + 1) * kTree), one element per thread.
__global__ void reduce_sum_v1_kernel(const float* in, int64_t n, float* out) {
  __shared__ float cache[kTree];
  const int64_t i = int64_t(blockIdx.x) * kTree + threadIdx.x;
  const float total = tree_sum(i < n ? in[i] : 0.0f, cache);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

// The offset of element i of channel c's n * s values in [n, c, s] data.
__device__ __forceinline__ int64_t channel_offset(const BatchNormShape& s, int64_t c, int64_t i) {
  return (i / s.s * s.c + c) * s.s + i % s.s;
}

// Block c: channel c's mean, then its variance (a second pass over the data), then y (a third).
__global__ void batch_norm_fwd_v1_kernel(BatchNormShape s, float eps, const float* x,
                                         const float* weight, const float* bias, float* y) {
  __shared__ float cache[kTree];
  const int64_t c = blockIdx.x, count = s.n * s.s;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += kTree) sum += x[channel_offset(s, c, i)];
  const float mean = tree_sum(sum, cache) / static_cast<float>(count);
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += kTree) {
    const float d = x[channel_offset(s, c, i)] - mean;
    sq += d * d;
  }
  const float var = tree_sum(sq, cache) / static_cast<float>(count);
  const float scale = weight[c] / sqrtf(var + eps);
  for (int64_t i = threadIdx.x; i < count; i += kTree) {
    const int64_t at = channel_offset(s, c, i);
    y[at] = (x[at] - mean) * scale + bias[c];
  }
}

unsigned tree_blocks(int64_t n) {
  const int64_t b = (n + kTree - 1) / kTree;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

}  // namespace

void gemm_v1(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
             gpu::Stream stream) {
  if (m == 0 || n == 0) return;
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((m + kTile - 1) / kTile));
  EMBER_LAUNCH(gemm_v1_kernel, grid, dim3(kTile, kTile), 0, stream, m, n, k, a, b, c);
}

void gemm_v2(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
             gpu::Stream stream) {
  if (m == 0 || n == 0) return;
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((m + kTile - 1) / kTile));
  EMBER_LAUNCH(gemm_v2_kernel, grid, dim3(kTile, kTile), 0, stream, m, n, k, a, b, c);
}

void conv2d_fwd_v1(const ConvShape& s, const float* x, const float* w, float* y,
                   gpu::Stream stream) {
  const int64_t total = s.n * s.k * s.oh * s.ow;
  if (total == 0) return;
  EMBER_LAUNCH(conv2d_fwd_v1_kernel, dim3(tree_blocks(total)), dim3(kTree), 0, stream, s, total, x,
               w, y);
}

// Every level but the last writes its block sums to the workspace, one after another.
size_t reduce_sum_v1_workspace_floats(int64_t n) {
  size_t floats = 0;
  for (unsigned blocks = tree_blocks(n); blocks > 1; blocks = tree_blocks(blocks)) floats += blocks;
  return floats;
}

void reduce_sum_v1(int64_t n, const float* x, float* out, float* workspace, gpu::Stream stream) {
  const float* in = x;
  for (;;) {
    const unsigned blocks = tree_blocks(n);
    float* dst = blocks == 1 ? out : workspace;
    EMBER_LAUNCH(reduce_sum_v1_kernel, dim3(blocks), dim3(kTree), 0, stream, in, n, dst);
    if (blocks == 1) return;
    in = dst;
    n = blocks;
    workspace += blocks;
  }
}

void batch_norm_fwd_v1(const BatchNormShape& s, double eps, const float* x, const float* weight,
                       const float* bias, float* y, gpu::Stream stream) {
  if (s.c == 0 || s.n * s.s == 0) return;
  EMBER_LAUNCH(batch_norm_fwd_v1_kernel, dim3(static_cast<unsigned>(s.c)), dim3(kTree), 0, stream,
               s, static_cast<float>(eps), x, weight, bias, y);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

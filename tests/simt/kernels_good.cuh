// Known-good kernels for the emulator's tests, written as a kernels/cuda file would be.
#pragma once

#include "kernels/cuda/compat.h"

namespace ember::simt_test {

constexpr int kTile = 16;
constexpr unsigned kFull = 0xffffffffu;

// C[M,N] = A[M,K] * B[K,N], row-major, one 16x16 output tile per block through shared memory.
__global__ void sgemm_tiled_kernel(int M, int N, int K, const float* __restrict__ A,
                                   const float* __restrict__ B, float* __restrict__ C) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

// *out += sum(x): warp sums by shuffles, block sum through shared memory, one atomicAdd per block.
__global__ void reduce_sum_kernel(const float* __restrict__ x, int n, float* out) {
  __shared__ float warp_sums[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(kFull, v, off);
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x / warpSize) ? warp_sums[lane] : 0.0f;
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(kFull, v, off);
    if (lane == 0) atomicAdd(out, v);
  }
}

// Every warp collective and barrier reduction, recorded per thread: 10 ints each.
__global__ void warp_ops_kernel(int* out) {
  const int t = threadIdx.x, lane = t % warpSize;
  int* o = out + t * 10;
  o[0] = __shfl_sync(kFull, t, 3);
  o[1] = __shfl_up_sync(kFull, t, 2);
  o[2] = __shfl_down_sync(kFull, t, 5);
  o[3] = __shfl_xor_sync(kFull, t, 1);
  o[4] = static_cast<int>(__ballot_sync(kFull, lane % 3 == 0));
  o[5] = __any_sync(kFull, t == 40);
  o[6] = __all_sync(kFull, lane < 31);
  o[7] = __syncthreads_count(t % 4 == 0);
  o[8] = __shfl_sync(kFull, t, 1, 8);
  __syncwarp();
  o[9] = __syncthreads_and(t < 1000) + 2 * __syncthreads_or(t == 5);
}

// Integer and floating-point atomics from every thread of every block.
__global__ void atomics_kernel(int* isum, unsigned long long* usum, int* imax, int* imin,
                               float* fsum, double* dsum, int* cas_winners, unsigned* bits) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(isum, g);
  atomicAdd(usum, 1ull);
  atomicMax(imax, g);
  atomicMin(imin, -g);
  atomicAdd(fsum, 0.5f);
  atomicAdd(dsum, 0.25);
  if (atomicCAS(cas_winners, 0, g + 1) == 0) atomicAdd(cas_winners + 1, 1);
  atomicOr(bits, 1u << (g % 32));
}

// y = x reversed within each block, through dynamic shared memory.
__global__ void reverse_kernel(const float* x, float* y) {
  EMBER_DYNAMIC_SHARED(float, s);
  const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  s[t] = x[base + t];
  __syncthreads();
  y[base + t] = s[blockDim.x - 1 - t];
}

}  // namespace ember::simt_test

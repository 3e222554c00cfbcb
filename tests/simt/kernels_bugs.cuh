// Kernels with seeded bugs: each must be caught by the emulator (a report or a wrong answer).
#pragma once

#include "kernels/cuda/compat.h"

namespace ember::simt_test {

// Threads past 48 return before the barrier the others wait at.
__global__ void early_return_kernel(float* out) {
  __shared__ float s[64];
  if (threadIdx.x >= 48) return;
  s[threadIdx.x] = float(threadIdx.x);
  __syncthreads();  // kEarlyReturnBarrierLine
  out[threadIdx.x] = s[47 - threadIdx.x];
}
constexpr int kEarlyReturnBarrierLine = 13;

// Odd and even threads wait at different barriers.
__global__ void divergent_barrier_kernel(float* out) {
  if (threadIdx.x % 2) {
    out[threadIdx.x] = 1.0f;
    __syncthreads();  // kDivergentOddLine
  } else {
    out[threadIdx.x] = 2.0f;
    __syncthreads();  // kDivergentEvenLine
  }
}
constexpr int kDivergentOddLine = 22;
constexpr int kDivergentEvenLine = 25;

// The reverse kernel without its barrier: reads neighbours' slots before they are written.
__global__ void reverse_missing_barrier_kernel(const float* x, float* y) {
  EMBER_DYNAMIC_SHARED(float, s);
  const int t = threadIdx.x;
  s[t] = x[t];
  y[t] = s[blockDim.x - 1 - t];
}

// A full-mask shuffle that only half the warp reaches.
__global__ void divergent_shuffle_kernel(float* out) {
  float v = float(threadIdx.x);
  if (threadIdx.x % 32 < 16) v += __shfl_down_sync(0xffffffffu, v, 1);  // kShuffleLine
  out[threadIdx.x] = v;
}
constexpr int kShuffleLine = 42;

}  // namespace ember::simt_test

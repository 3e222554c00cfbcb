// Tensor Core kernels with seeded bugs: each must be caught by the emulator (a report naming the
// line, or a wrong answer).
#pragma once

#include "kernels/cuda/compat.h"

#include "kernels/cuda/tensor_core.cuh"

namespace ember::simt_test {

using namespace ember::kernels::EMBER_KERNEL_NS;

// A warp stages a 16 x 16 tile with cp.async and reads it with ldmatrix before waiting: a
// barrier does not wait for copies in flight.
__global__ void ldmatrix_before_wait_kernel(const __half* A, float* out) {
  __shared__ __align__(16) __half s[16 * 16];
  const int l = threadIdx.x;
  cp_async_16(&s[8 * l], A + 8 * l);  // kCopyLine
  cp_async_commit();
  __syncthreads();
  uint32_t a[4];
  ldmatrix_x4(a, &s[16 * (l % 16) + 8 * (l / 16)]);  // kLdmatrixBeforeWaitLine
  cp_async_wait_all();
  out[l] = float(a[0] & 0xffffu);
}
constexpr int kCopyLine = 18;
constexpr int kLdmatrixBeforeWaitLine = 22;

// Each thread copies 4 floats with cp.async and, after a barrier, reads its neighbour's; with
// `wait` false it forgets to wait for its copy first.
__global__ void read_before_wait_kernel(const float* x, float* y, bool wait) {
  __shared__ __align__(16) float s[4 * 32];
  const int t = threadIdx.x;
  cp_async_16(&s[4 * t], x + 4 * t);
  cp_async_commit();
  if (wait) cp_async_wait<0>();
  __syncthreads();
  y[t] = s[(4 * t + 5) % (4 * 32)];
  __syncthreads();  // every read above happens before any thread's wait below
  cp_async_wait_all();
}

// The row addresses are 2 bytes past a 16-byte boundary.
__global__ void ldmatrix_misaligned_kernel(float* out) {
  __shared__ __align__(16) __half s[16 * 24];
  const int l = threadIdx.x;
  for (int i = l; i < 16 * 24; i += 32) s[i] = __half(1.0f);
  __syncthreads();
  uint32_t a[4];
  ldmatrix_x4(a, &s[24 * (l % 16) + 8 * (l / 16) + 1]);  // kMisalignedLine
  out[l] = float(a[0] & 0xffffu);
}
constexpr int kMisalignedLine = 50;

// ldmatrix straight from global memory; and an .x1 whose unread upper lanes pass global
// addresses (sm_75 requires every lane's to be valid).
__global__ void ldmatrix_global_kernel(const __half* A, float* out, bool only_upper_lanes) {
  __shared__ __align__(16) __half s[8 * 8];
  const int l = threadIdx.x;
  s[2 * l] = __half(1.0f);
  s[2 * l + 1] = __half(1.0f);
  __syncthreads();
  uint32_t r[1];
  const __half* row = only_upper_lanes && l < 8 ? &s[8 * l] : A + 8 * (l % 16);
  ldmatrix_x1(r, row);  // kGlobalLine
  out[l] = float(r[0] & 0xffffu);
}
constexpr int kGlobalLine = 65;

// Half the warp returns before the mma.sync the other half reaches.
__global__ void divergent_mma_kernel(float* out) {
  const int l = threadIdx.x;
  float d[4] = {0, 0, 0, 0};
  const uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  if (l >= 16) return;
  mma_m16n8k16_f16(d, a, b, d);  // kDivergentMmaLine
  out[l] = d[0];
}
constexpr int kDivergentMmaLine = 76;

// An mma.sync in a block of 16 threads: its only warp is not full.
__global__ void partial_warp_mma_kernel(float* out) {
  float d[4] = {0, 0, 0, 0};
  const uint32_t a[2] = {0, 0}, b[1] = {0};
  mma_m16n8k8_f16(d, a, b, d);  // kPartialWarpLine
  out[threadIdx.x] = d[0];
}
constexpr int kPartialWarpLine = 85;

// cp.async into global memory instead of shared.
__global__ void cp_async_to_global_kernel(const float* x, float* y) {
  const int t = threadIdx.x;
  cp_async_16(y + 4 * t, x + 4 * t);  // kCopyToGlobalLine
  cp_async_wait_all();
}
constexpr int kCopyToGlobalLine = 93;

}  // namespace ember::simt_test

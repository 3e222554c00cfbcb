// Tensor Core kernels for the emulator's tests, written as a kernels/cuda file would be: probes
// that hand the lanes' registers to one instruction and return what every lane got back, a
// cp.async group probe, and a multi-stage GEMM on ldmatrix, mma.sync and cp.async.
#pragma once

#include <type_traits>

#include "kernels/cuda/compat.h"

#include "kernels/cuda/tensor_core.cuh"

namespace ember::simt_test {

using namespace ember::kernels::EMBER_KERNEL_NS;

enum class MmaShape : int { M16N8K16, M16N8K8 };

// One warp: lane l's registers are a[4l..4l+4), b[2l..2l+2), c[4l..4l+4) (the first 2 and 1 of
// a and b for m16n8k8); d[4l..4l+4) = what mma.sync hands back to lane l.
__global__ void mma_probe_kernel(MmaShape shape, bool bf16, const uint32_t* a, const uint32_t* b,
                                 const float* c, float* d) {
  const int l = threadIdx.x;
  float acc[4] = {c[4 * l], c[4 * l + 1], c[4 * l + 2], c[4 * l + 3]};
  if (shape == MmaShape::M16N8K16) {
    const uint32_t ra[4] = {a[4 * l], a[4 * l + 1], a[4 * l + 2], a[4 * l + 3]};
    const uint32_t rb[2] = {b[2 * l], b[2 * l + 1]};
    if (bf16)
      mma_m16n8k16_bf16(acc, ra, rb, acc);
    else
      mma_m16n8k16_f16(acc, ra, rb, acc);
  } else {
    const uint32_t ra[2] = {a[4 * l], a[4 * l + 1]};
    const uint32_t rb[1] = {b[2 * l]};
    if (bf16)
      mma_m16n8k8_bf16(acc, ra, rb, acc);
    else
      mma_m16n8k8_f16(acc, ra, rb, acc);
  }
  for (int i = 0; i < 4; ++i) d[4 * l + i] = acc[i];
}

// The shared-memory row (of 32 rows of 8 elements) whose address lane l passes to ldmatrix: a
// permutation, so that the test sees rows come from the lanes' addresses and not from their order.
__host__ __device__ constexpr int probe_row(int lane) {
  return (5 * lane + 3) % 32;
}

// Each block (one warp) stages `rows` (32 x 8 16-bit values) in static shared memory and runs one
// ldmatrix of `matrices` matrices; out[128 * block + 4l + m] = register m of lane l.
__global__ void ldmatrix_probe_kernel(const uint16_t* rows, int matrices, bool trans,
                                      uint32_t* out) {
  __shared__ __align__(16) uint16_t s[32 * 8];
  const int l = threadIdx.x;
  for (int c = 0; c < 8; ++c) s[8 * l + c] = rows[8 * l + c];
  __syncthreads();
  const uint16_t* row = &s[8 * probe_row(l)];
  uint32_t r[4] = {0, 0, 0, 0};
  uint32_t(&r1)[1] = reinterpret_cast<uint32_t(&)[1]>(r);
  uint32_t(&r2)[2] = reinterpret_cast<uint32_t(&)[2]>(r);
  if (matrices == 1 && !trans) ldmatrix_x1(r1, row);
  if (matrices == 1 && trans) ldmatrix_x1_trans(r1, row);
  if (matrices == 2 && !trans) ldmatrix_x2(r2, row);
  if (matrices == 2 && trans) ldmatrix_x2_trans(r2, row);
  if (matrices == 4 && !trans) ldmatrix_x4(r, row);
  if (matrices == 4 && trans) ldmatrix_x4_trans(r, row);
  for (int m = 0; m < 4; ++m) out[128 * blockIdx.x + 4 * l + m] = r[m];
}

// One thread, two cp.async groups: what shared memory holds after wait_group 1 (the older group
// landed, the newer still pending) and after wait_group 0. src holds 16 bytes; the second copy
// takes its first 6 bytes and zero-fills the rest. out[0..16) and out[16..32): the two
// destinations after the first wait, out[32..64) after the second.
__global__ void cp_async_groups_kernel(const unsigned char* src, unsigned char* out) {
  __shared__ __align__(16) unsigned char s[2][16];
  cp_async_16(s[0], src);
  cp_async_commit();
  cp_async_16_zfill(s[1], src, 6);
  cp_async_commit();
  cp_async_wait<1>();
  for (int i = 0; i < 16; ++i) out[i] = s[0][i], out[16 + i] = s[1][i];
  cp_async_wait<0>();
  for (int i = 0; i < 16; ++i) out[32 + i] = s[0][i], out[48 + i] = s[1][i];
}

// C[M,N] = A[M,K] * B[K,N] (A, B row-major 16-bit with leading dimensions lda, ldb; C float,
// ldc = N). A 32 x 32 block tile, four warps of 16 x 16, k in steps of 32 through a
// kStages-deep cp.async pipeline in dynamic shared memory; tile edges are zero-filled.
// requires: lda and ldb multiples of 8, A and B 16-byte aligned; 128 threads; grid
// (ceil(N / 32), ceil(M / 32)); gemm_tc_shared_bytes() of dynamic shared memory.
namespace gemm_tc {
constexpr int kBM = 32, kBN = 32, kBK = 32, kStages = 3;
constexpr int kSkew = 8;  // 16 bytes at the end of each shared row: rows stay 16-byte aligned
constexpr int kLdA = kBK + kSkew, kLdB = kBN + kSkew;
constexpr int kStageElems = kBM * kLdA + kBK * kLdB;
}  // namespace gemm_tc
constexpr size_t gemm_tc_shared_bytes() {
  return gemm_tc::kStages * gemm_tc::kStageElems * 2;
}

// How many of the 8 elements from `start` lie before `end`.
__device__ inline int elems_before(int start, int end) {
  return end - start < 0 ? 0 : end - start > 8 ? 8 : end - start;
}

template <typename T>
__device__ void gemm_tc_load_stage(T* stage, const T* A, const T* B, int M, int N, int K, int lda,
                                   int ldb, int m0, int n0, int k0) {
  using namespace gemm_tc;
  // 128 chunks of 8 elements for each tile: thread t copies chunk t of A's and of B's, the part
  // past the matrix zero-filled (from the matrix's first element, a valid address).
  const int t = threadIdx.x;
  const int ar = t / (kBK / 8), ac = 8 * (t % (kBK / 8));
  const int am = m0 + ar, ak = k0 + ac;
  const int a_valid = am < M ? elems_before(ak, K) : 0;
  cp_async_16_zfill(stage + ar * kLdA + ac, a_valid ? A + size_t(am) * lda + ak : A, 2 * a_valid);
  const int br = t / (kBN / 8), bc = 8 * (t % (kBN / 8));
  const int bk = k0 + br, bn = n0 + bc;
  const int b_valid = bk < K ? elems_before(bn, N) : 0;
  T* bs = stage + kBM * kLdA;
  cp_async_16_zfill(bs + br * kLdB + bc, b_valid ? B + size_t(bk) * ldb + bn : B, 2 * b_valid);
}

template <typename T>
__global__ void gemm_tc_kernel(int M, int N, int K, const T* A, int lda, const T* B, int ldb,
                               float* C) {
  using namespace gemm_tc;
  EMBER_DYNAMIC_SHARED(T, smem);
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = 16 * (warp / 2), wn = 16 * (warp % 2);  // the warp's 16 x 16 tile in the block's
  float acc[2][4] = {};                                  // two 16 x 8 accumulators
  const int tiles = (K + kBK - 1) / kBK;
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles)
      gemm_tc_load_stage(smem + s * kStageElems, A, B, M, N, K, lda, ldb, m0, n0, s * kBK);
    cp_async_commit();
  }
  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<kStages - 2>();  // tile t has landed (this thread's copies) ...
    __syncthreads();               // ... and everyone's; and the stage refilled next is free
    const int next = t + kStages - 1;
    if (next < tiles)
      gemm_tc_load_stage(smem + (next % kStages) * kStageElems, A, B, M, N, K, lda, ldb, m0, n0,
                         next * kBK);
    cp_async_commit();
    const T* as = smem + (t % kStages) * kStageElems;
    const T* bs = as + kBM * kLdA;
    for (int kk = 0; kk < kBK; kk += 16) {
      // Lane l points at row l % 16, column 8 * (l / 16) of the 16 x 16 A and B sub-tiles: x4
      // gives A's fragment, x4.trans B's fragments of columns wn..wn+7 and wn+8..wn+15.
      uint32_t a[4], b[4];
      ldmatrix_x4(a, as + (wm + lane % 16) * kLdA + kk + 8 * (lane / 16));
      ldmatrix_x4_trans(b, bs + (kk + lane % 16) * kLdB + wn + 8 * (lane / 16));
      const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      if constexpr (std::is_same_v<T, __half>) {
        mma_m16n8k16_f16(acc[0], a, b0, acc[0]);
        mma_m16n8k16_f16(acc[1], a, b1, acc[1]);
      } else {
        mma_m16n8k16_bf16(acc[0], a, b0, acc[0]);
        mma_m16n8k16_bf16(acc[1], a, b1, acc[1]);
      }
    }
  }
  cp_async_wait_all();
  // The accumulator map: register i of lane l is row l / 4 + 8 * (i / 2), column 2 * (l % 4) +
  // i % 2 of its 16 x 8 tile.
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 4; ++i) {
      const int m = m0 + wm + lane / 4 + 8 * (i / 2), n = n0 + wn + 8 * j + 2 * (lane % 4) + i % 2;
      if (m < M && n < N) C[size_t(m) * N + n] = acc[j][i];
    }
}

}  // namespace ember::simt_test

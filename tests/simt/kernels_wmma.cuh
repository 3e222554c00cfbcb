// WMMA kernels for the emulator's tests: one warp per 16x16 tile of C = A * B.
#pragma once

#include "kernels/cuda/compat.h"

namespace ember::simt_test {

// A row-major [M,K] half, B column-major (B^T stored row-major [N,K]) half, C row-major float.
__global__ void wmma_gemm_f16_kernel(int M, int N, int K, const __half* A, const __half* Bt,
                                     float* C) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  const int tm = blockIdx.y * 16, tn = blockIdx.x * 16;
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + tm * K + k, K);
    wmma::load_matrix_sync(b, Bt + tn * K + k, K);
    wmma::mma_sync(acc, a, b, acc);
  }
  (void)M;
  wmma::store_matrix_sync(C + tm * N + tn, acc, N, wmma::mem_row_major);
}

// A row-major [M,K] bf16, B row-major [K,N] bf16, C column-major float (ldm M), C += A * B.
__global__ void wmma_gemm_bf16_kernel(int M, int N, int K, const __nv_bfloat16* A,
                                      const __nv_bfloat16* B, float* C) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  const int tm = blockIdx.y * 16, tn = blockIdx.x * 16;
  wmma::load_matrix_sync(acc, C + tn * M + tm, M, wmma::mem_col_major);
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + tm * K + k, K);
    wmma::load_matrix_sync(b, B + k * N + tn, N);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + tn * M + tm, acc, M, wmma::mem_col_major);
}

// Seeded bug: odd lanes load from another tile.
__global__ void wmma_divergent_pointer_kernel(const __half* A, float* C) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::load_matrix_sync(a, A + (threadIdx.x % 2) * 16, 32);
  C[threadIdx.x] = float(a.x[0]);
}

}  // namespace ember::simt_test

// Tiled GEMM, the textbook way: each block computes a kBM x kBN tile of C, walking K in steps of
// kBK through shared memory; each of its 16 x 16 threads keeps a kTM x kTN register tile of
// accumulators and reads its A and B fragments from shared memory once per k. Loads are
// bounds-checked (zeros outside the matrices), so any M, N, K works; operands are read through
// their strides, so transposed views need no copy. blockIdx.z walks the batch.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/gemm.cuh"

#include <stdexcept>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using gpu_types::GemmShape;
using gpu_types::Scalar;
using namespace detail;

constexpr int kBM = 64, kBN = 64, kBK = 16;
constexpr int kThreadsX = 16, kThreadsY = 16;  // threadIdx.x along N, threadIdx.y along M
constexpr int kTM = kBM / kThreadsY, kTN = kBN / kThreadsX;
constexpr int kThreads = kThreadsX * kThreadsY;
constexpr unsigned kMaxBatchBlocks = 65535;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    gemm_tiled_kernel(GemmShape s, const T* __restrict__ a, const T* __restrict__ b,
                      T* __restrict__ c) {
  __shared__ T as[kBK][kBM];  // A tile, stored k-major so a thread reads a column of it
  __shared__ T bs[kBK][kBN];
  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  const int64_t row0 = int64_t(blockIdx.y) * kBM, col0 = int64_t(blockIdx.x) * kBN;

  for (int64_t z = blockIdx.z; z < s.batch; z += gridDim.z) {
    int64_t off[2];
    strided_offsets(s.batch_index, z, off);
    const T* az = a + off[0];
    const T* bz = b + off[1];
    T acc[kTM][kTN];
    for (int i = 0; i < kTM; ++i)
      for (int j = 0; j < kTN; ++j) acc[i][j] = T(0);

    for (int64_t k0 = 0; k0 < s.k; k0 += kBK) {
      // Each thread loads kBM * kBK / kThreads elements of each tile.
      for (int e = tid; e < kBM * kBK; e += kThreads) {
        const int r = e / kBK, kk = e % kBK;
        const int64_t gr = row0 + r, gk = k0 + kk;
        as[kk][r] = gr < s.m && gk < s.k ? az[gr * s.a_row + gk * s.a_col] : T(0);
      }
      for (int e = tid; e < kBK * kBN; e += kThreads) {
        const int kk = e / kBN, cc = e % kBN;
        const int64_t gk = k0 + kk, gc = col0 + cc;
        bs[kk][cc] = gk < s.k && gc < s.n ? bz[gk * s.b_row + gc * s.b_col] : T(0);
      }
      __syncthreads();
      for (int kk = 0; kk < kBK; ++kk) {
        T af[kTM], bf[kTN];
        // Rows ty, ty + 16, ...: neighbouring threads read neighbouring words.
        for (int i = 0; i < kTM; ++i) af[i] = as[kk][threadIdx.y + i * kThreadsY];
        for (int j = 0; j < kTN; ++j) bf[j] = bs[kk][threadIdx.x + j * kThreadsX];
        for (int i = 0; i < kTM; ++i)
          for (int j = 0; j < kTN; ++j) acc[i][j] += af[i] * bf[j];
      }
      __syncthreads();  // the tiles are overwritten by the next step
    }

    T* cz = c + z * s.m * s.n;
    for (int i = 0; i < kTM; ++i) {
      const int64_t r = row0 + threadIdx.y + i * kThreadsY;
      if (r >= s.m) continue;
      for (int j = 0; j < kTN; ++j) {
        const int64_t col = col0 + threadIdx.x + j * kThreadsX;
        if (col < s.n) cz[r * s.n + col] = acc[i][j];
      }
    }
  }
}

}  // namespace

void gemm_batched(Scalar t, const GemmShape& s, const void* a, const void* b, void* c,
                  gpu::Stream stream) {
  if (t != Scalar::f32 && t != Scalar::f64)
    throw std::invalid_argument("gemm_batched: only float32 and float64 kernels exist");
  if (s.m == 0 || s.n == 0 || s.batch == 0) return;
  const dim3 grid(static_cast<unsigned>((s.n + kBN - 1) / kBN),
                  static_cast<unsigned>((s.m + kBM - 1) / kBM),
                  static_cast<unsigned>(s.batch < kMaxBatchBlocks ? s.batch : kMaxBatchBlocks));
  const dim3 block(kThreadsX, kThreadsY);
  if (t == Scalar::f32)
    EMBER_LAUNCH(gemm_tiled_kernel<float>, grid, block, 0, stream, s, static_cast<const float*>(a),
                 static_cast<const float*>(b), static_cast<float*>(c));
  else
    EMBER_LAUNCH(gemm_tiled_kernel<double>, grid, block, 0, stream, s,
                 static_cast<const double*>(a), static_cast<const double*>(b),
                 static_cast<double*>(c));
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

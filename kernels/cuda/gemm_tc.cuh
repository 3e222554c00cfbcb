// The mma.sync block tile shared by the Tensor Core kernels (kernels/cuda/gemm_tc.cu's GEMM and
// kernels/cuda/conv2d_tc.cu's implicit-GEMM convolutions): a BM x BN tile of C = A x B over K
// in steps of 32, mma.sync.m16n8k16 on fragments that ldmatrix reads from shared memory, the
// shared tiles filled by a 3-stage pipeline, float32 accumulators handed to the problem's
// epilogue element by element. gemm_tc.cu's header comment explains the tile, the layouts and
// the pipeline.
//
// A problem P says what the GEMM's operands and result are:
//   int64_t m, n, k;                                     the GEMM's sizes
//   template <typename Tile, bool KMajor> void stage_a(T* dst, int64_t m0, int64_t k0) const;
//   template <typename Tile, bool KMajor> void stage_b(T* dst, int64_t n0, int64_t k0) const;
//       fill a shared tile of Tile::kBM (kBN) rows x Tile::kBK of A (B^T) from row m0 (n0) and
//       reduction index k0, zeros outside, K-major ([rows][kBK + skew]) or not ([kBK][rows +
//       skew]); by cp.async (then the pipeline's waits cover them) or by plain stores;
//   void store(int64_t i, int64_t j, float v) const;      C[i][j] = v, for i < m, j < n.
// Also what the Tensor Core GEMM kernels (gemm_tc.cu's wmma and mma_sync, gemm_wgmma.cu's wgmma)
// share: their arguments (TcArgs), the walk over (batch item, row tile) pairs and the epilogue's
// store of one element.
// Included by kernel files after kernels/cuda/compat.h.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/tensor_core.cuh"
#include "kernels/gemm_shape.h"

namespace ember::kernels::EMBER_KERNEL_NS::tc {

// bfloat16 Tensor Cores exist from sm_80; an sm_75 build of a bfloat16 kernel is empty (the
// plans never launch it).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
constexpr bool kBf16TensorCores = false;
#else
constexpr bool kBf16TensorCores = true;
#endif
template <typename T>
constexpr bool kHasTensorCores = std::is_same_v<T, __half> || kBf16TensorCores;

// What the GEMM kernels (gemm_tc.cu's and gemm_wgmma.cu's) take: the shape, the epilogue's scalars and C's dtype, how each operand is
// loaded (mma_sync and wgmma), and how many row tiles the grid's y walks with the batch.
struct TcArgs {
  GemmShape s;
  float alpha = 1.0f, beta = 0.0f;
  DType out = DType::f32;
  bool a_async = false, b_async = false;
  int64_t m_tiles = 0;
};

// C's element i = alpha * acc (+ beta * C's old value unless beta is 0), rounded to C's dtype.
__device__ __forceinline__ void store_c(const TcArgs& g, void* c, int64_t i, float acc) {
  float v = g.alpha * acc;
  if (g.out == DType::f32) {
    float* p = static_cast<float*>(c) + i;
    if (g.beta != 0.0f) v += g.beta * *p;
    *p = v;
  } else if (g.out == DType::f16) {
    __half* p = static_cast<__half*>(c) + i;
    if (g.beta != 0.0f) v += g.beta * __half2float(*p);
    *p = __float2half_rn(v);
  } else {
    __nv_bfloat16* p = static_cast<__nv_bfloat16*>(c) + i;
    if (g.beta != 0.0f) v += g.beta * __bfloat162float(*p);
    *p = __float2bfloat16_rn(v);
  }
}

// The (batch item, row tile) pairs of this block, as gemm.cu's kernels walk them.
template <typename F>
__device__ __forceinline__ void for_each_item(const TcArgs& g, F&& f) {
  const int64_t items = g.s.batch * g.m_tiles, stride = int64_t(gridDim.y) * gridDim.z;
  for (int64_t item = int64_t(blockIdx.z) * gridDim.y + blockIdx.y; item < items; item += stride)
    f(item / g.m_tiles, item % g.m_tiles);
}

// The wgmma kernel's block tile (kernels/cuda/gemm_wgmma.cu): 128 x 128 of C, two warpgroups of
// 64 x 128, K in steps of 64 through kStages shared stages of both operands' tiles.
struct WgmmaTile {
  static constexpr int kBM = 128, kBN = 128, kBK = 64, kStages = 3, kThreads = 256;
  static constexpr size_t kSharedBytes = size_t(kStages) * (kBM + kBN) * kBK * 2;
};

// Whether this build holds the wgmma kernel's sm_90a code (never on emu; on cuda when the build's
// architectures include 90).
bool wgmma_built();

// Runs plan p (kernel wgmma, WgmmaTile, the operands' layouts and copies as p says) with operands
// of dtype `in` (float16 or bfloat16). requires: wgmma_built() and an sm_90 device.
void gemm_wgmma(const TcGemmPlan& p, const TcArgs& args, DType in, const void* a, const void* b,
                void* c, gpu::Stream stream);

// A BM x BN block tile: 128 x 128 (8 warps of 64 x 32), 64 x 64 (4 warps of 32 x 32) or, for
// narrow products (N <= 16: a few filters or channels), 64 x 16 (2 warps of 32 x 16).
template <int BM, int BN = BM>
struct MmaTile {
  static constexpr int kBM = BM, kBN = BN, kBK = 32, kStages = 3, kSkew = 8;
  static constexpr int kWM = BM == 128 ? 64 : 32, kWN = BN < 32 ? BN : 32;  // one warp's tile
  static constexpr int kWarpsN = kBN / kWN;
  static constexpr int kThreads = 32 * (kBM / kWM) * kWarpsN;
  static constexpr int kMI = kWM / 16, kNI = kWN / 8;  // mma tiles per warp
  // A shared tile of `rows` (M or N) x kBK: K-major [rows][kBK + skew] or [kBK][rows + skew].
  __host__ __device__ static constexpr int ld(int rows, bool k_major) {
    return k_major ? kBK + kSkew : rows + kSkew;
  }
  __host__ __device__ static constexpr int elems(int rows, bool k_major) {
    return k_major ? rows * (kBK + kSkew) : kBK * (rows + kSkew);
  }
  __host__ __device__ static constexpr int stage_elems(bool ak, bool bk) {
    return elems(kBM, ak) + elems(kBN, bk);
  }
  __host__ __device__ static constexpr size_t shared_bytes(bool ak, bool bk, size_t elem) {
    return size_t(kStages) * stage_elems(ak, bk) * elem;
  }
};

// Whether an m x n product (times `items`) takes the 128 x 128 tile: both sides longer than 64
// (a shorter one would fill half the tile with zeros), still two blocks per multiprocessor, and
// `bytes` of shared memory that the device allows.
inline bool big_tile(int64_t m, int64_t n, int64_t items, size_t bytes) {
  const int64_t blocks = (m + 127) / 128 * ((n + 127) / 128) * items;
  return m > 64 && n > 64 && blocks >= 2 * int64_t(detail::multiprocessors()) &&
         bytes <= detail::max_shared_optin();
}

// How many of the 8 elements from `start` lie before `end`.
__device__ __forceinline__ int chunk_valid(int64_t start, int64_t end) {
  return end - start <= 0 ? 0 : end - start >= 8 ? 8 : int(end - start);
}

// Stages one operand's `Rows` x kBK tile (rows r0.., k k0..) of the `rows` x `k` matrix at src
// (strides rs along the rows, ks along K) into `dst`, K-major or not: by cp.async chunks along
// the unit stride (`async`), else element by element. Zeros outside the matrix.
template <typename Tile, int Rows, bool KMajor, typename T>
__device__ __forceinline__ void stage_strided(T* dst, const T* src, int64_t rows, int64_t k,
                                              int64_t rs, int64_t ks, int64_t r0, int64_t k0,
                                              bool async) {
  constexpr int kBK = Tile::kBK, kLd = Tile::ld(Rows, KMajor);
  const int tid = threadIdx.x;
  if (async) {
    // KMajor: chunks of 8 along K (ks == 1); else chunks of 8 rows (rs == 1).
    constexpr int kAlong = KMajor ? kBK / 8 : Rows / 8;
    for (int ch = tid; ch < Rows * kBK / 8; ch += Tile::kThreads) {
      const int outer = ch / kAlong, inner = 8 * (ch % kAlong);
      const int r = KMajor ? outer : inner, kk = KMajor ? inner : outer;
      const int64_t gr = r0 + r, gk = k0 + kk;
      const int valid =
          KMajor ? (gr < rows ? chunk_valid(gk, k) : 0) : (gk < k ? chunk_valid(gr, rows) : 0);
      T* d = dst + (KMajor ? r * kLd + kk : kk * kLd + r);
      // A chunk entirely outside reads nothing; its source is any valid address.
      cp_async_16_zfill(d, valid ? src + gr * rs + gk * ks : src, 2 * valid);
    }
  } else {
    for (int e = tid; e < Rows * kBK; e += Tile::kThreads) {
      const int r = KMajor ? e / kBK : e % Rows, kk = KMajor ? e % kBK : e / Rows;
      const int64_t gr = r0 + r, gk = k0 + kk;
      dst[KMajor ? r * kLd + kk : kk * kLd + r] =
          gr < rows && gk < k ? src[gr * rs + gk * ks] : T(0.0f);
    }
  }
}

// Stages a `Rows` x kBK tile element by element through `at(row, kk)`, which returns the
// element (zero outside the operand); consecutive threads take consecutive rows when the tile
// is not K-major (the rows are the pixels of a gather), else consecutive k.
template <typename Tile, int Rows, bool KMajor, typename T, typename At>
__device__ __forceinline__ void stage_gather(T* dst, int64_t r0, int64_t k0, At&& at) {
  constexpr int kBK = Tile::kBK, kLd = Tile::ld(Rows, KMajor);
  for (int e = threadIdx.x; e < Rows * kBK; e += Tile::kThreads) {
    const int r = KMajor ? e / kBK : e % Rows, kk = KMajor ? e % kBK : e / Rows;
    dst[KMajor ? r * kLd + kk : kk * kLd + r] = at(r0 + r, k0 + kk);
  }
}

template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4],
                                          const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<T, __half>)
    mma_m16n8k16_f16(d, a, b, d);
  else
    mma_m16n8k16_bf16(d, a, b, d);
}

// The block's tile of C from row m0 and column n0 of problem `pr`, through the shared stages at
// `smem` (Tile::shared_bytes(AK, BK, sizeof(T)) bytes), its elements handed to pr.store.
// requires: Tile::kThreads threads; every thread of the block calls it with the same m0, n0.
template <typename Tile, bool AK, bool BK, typename T, typename P>
__device__ __forceinline__ void mma_block_tile(const P& pr, T* smem, int64_t m0, int64_t n0) {
  constexpr int kBK = Tile::kBK, kStages = Tile::kStages;
  constexpr int kMI = Tile::kMI, kNI = Tile::kNI;
  constexpr int kLdA = Tile::ld(Tile::kBM, AK), kLdB = Tile::ld(Tile::kBN, BK);
  constexpr int kAElems = Tile::elems(Tile::kBM, AK), kStage = Tile::stage_elems(AK, BK);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = Tile::kWM * (warp / Tile::kWarpsN), wn0 = Tile::kWN * (warp % Tile::kWarpsN);
  const int lr = lane % 8, lj = lane / 8;  // this lane's row of matrix lj of an ldmatrix.x4
  const int tiles = int((pr.k + kBK - 1) / kBK);
  auto stage = [&](int t) {  // fills shared stage t % kStages with K step t
    T* as = smem + (t % kStages) * kStage;
    pr.template stage_a<Tile, AK>(as, m0, int64_t(t) * kBK);
    pr.template stage_b<Tile, BK>(as + kAElems, n0, int64_t(t) * kBK);
  };
  float acc[kMI][kNI][4] = {};
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < tiles) stage(t);
    cp_async_commit();
  }
  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<kStages - 2>();  // step t's copies (this thread's) have landed ...
    __syncthreads();  // ... and everyone's; and the stage refilled next is no longer read
    if (t + kStages - 1 < tiles) stage(t + kStages - 1);
    cp_async_commit();
    const T* as = smem + (t % kStages) * kStage;
    const T* bs = as + kAElems;
    for (int kk = 0; kk < kBK; kk += 16) {
      uint32_t fa[kMI][4], fb[kNI][2];
      for (int i = 0; i < kMI; ++i) {
        const int m = wm0 + 16 * i;
        if constexpr (AK)  // lane l: row l % 16, columns 8 (l / 16) ..
          ldmatrix_x4(fa[i], as + (m + lane % 16) * kLdA + kk + 8 * (lane / 16));
        else  // matrix lj: k rows 8 (lj / 2).., m columns 8 (lj % 2)..
          ldmatrix_x4_trans(fa[i], as + (kk + lr + 8 * (lj / 2)) * kLdA + m + 8 * (lj % 2));
      }
      for (int j = 0; j < kNI; j += 2) {  // one x4 gives the fragments of two n8 tiles
        const int n = wn0 + 8 * j;
        uint32_t r[4];
        if constexpr (BK)  // matrix lj: n rows 8 (lj / 2).., k columns 8 (lj % 2)..
          ldmatrix_x4(r, bs + (n + lr + 8 * (lj / 2)) * kLdB + kk + 8 * (lj % 2));
        else  // lane l: k row l % 16, n columns 8 (l / 16)..
          ldmatrix_x4_trans(r, bs + (kk + lane % 16) * kLdB + n + 8 * (lane / 16));
        fb[j][0] = r[0], fb[j][1] = r[1], fb[j + 1][0] = r[2], fb[j + 1][1] = r[3];
      }
      for (int i = 0; i < kMI; ++i)
        for (int j = 0; j < kNI; ++j) mma_16816<T>(acc[i][j], fa[i], fb[j]);
    }
    EMBER_COUNT_WORK(2 * Tile::kBM * Tile::kBN * kBK / Tile::kThreads, 0);
  }
  cp_async_wait_all();
  __syncthreads();  // a next tile's prologue refills stages this tile's last steps read
  // The accumulator map: register r of lane 4g + t is row g + 8 (r / 2), column 2t + r % 2.
  const int gq = lane / 4, tq = lane % 4;
  for (int i = 0; i < kMI; ++i)
    for (int j = 0; j < kNI; ++j)
      for (int r = 0; r < 4; ++r) {
        const int64_t gm = m0 + wm0 + 16 * i + gq + 8 * (r / 2);
        const int64_t gn = n0 + wn0 + 8 * j + 2 * tq + r % 2;
        if (gm < pr.m && gn < pr.n) pr.store(gm, gn, acc[i][j][r]);
      }
}

}  // namespace ember::kernels::EMBER_KERNEL_NS::tc

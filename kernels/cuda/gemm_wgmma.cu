// The Hopper rung of the Tensor Core GEMM (kernels/gemm_shape.h, "Tensor Core GEMM"):
// C = alpha * A x B + beta * C with float16 or bfloat16 operands and float32 accumulation, on
// wgmma.mma_async, the warpgroup-wide asynchronous MMA of sm_90a.
//
// What changes from mma.sync (gemm_tc.cu's gemm_mma_kernel):
// - A warpgroup (4 warps, 128 threads) issues one m64n128k16 product: 64 x 128 of C from 64 x 16
//   of A and 16 x 128 of B, both read by the Tensor Cores straight from shared memory. No
//   ldmatrix, no fragments of A and B in registers: each operand is named by a 64-bit matrix
//   descriptor (its shared address, and the byte offsets between its 8 x 8 core matrices).
// - The product is asynchronous: wgmma.fence, the four k16 products of a 64-deep stage,
//   wgmma.commit_group, then wgmma.wait_group before the accumulators are read or the stage
//   refilled.
// - Shared memory is read by the async proxy: after cp.async has written a stage, each thread
//   orders its writes before the Tensor Cores' reads with fence.proxy.async, then the block
//   meets at a barrier.
//
// The block tile: 128 x 128 of C, two warpgroups of 64 x 128 (64 float accumulators per thread),
// K in steps of 64 through a 3-stage cp.async pipeline (96 KiB of shared memory, two blocks per
// multiprocessor).
//
// Note [wgmma's shared layout]: wgmma reads an operand as 8 x 8 core matrices of 16-bit
// elements, each 8 rows of 16 contiguous bytes (128 bytes in all), with no swizzle here. A
// "K-major" operand has K along its 16-byte rows (a row-major A, a column-major B: no transpose
// in the instruction); an "MN-major" one has M (or N) along them (imm-trans = 1). In the PTX
// ISA's canonical layouts ("Shared Memory Matrix Layout"), element (row r of M or N, k) lies at
//   K-major:  (r % 8) * 8 + k % 8 + (r / 8) * SBO + (k / 8) * LBO     (in elements)
//   MN-major: (k % 8) * 8 + r % 8 + (r / 8) * SBO + (k / 8) * LBO
// LBO stepping along K and SBO along M or N. Each tile here puts consecutive core matrices
// along the operand's unit stride in global memory: K-major, LBO = 64 elements and SBO =
// 8 * kBK; MN-major, SBO = 64 and LBO = 8 * rows. Then the 16-byte chunk e of a tile (core
// matrix e / 8, its row e % 8) lies at byte 16 e: consecutive threads' cp.async chunks fill
// consecutive shared bytes (no bank conflicts), and a warp's 32 chunks read 8 runs of 64
// contiguous global bytes. A k16 step of the product starts 2 core matrices further along K;
// a warpgroup's 64 rows of A start 8 core matrices further along M.
//
// Edges and layouts as gemm_mma_kernel's: chunks past the matrix are zero-filled by cp.async's
// src-size; an operand cp.async cannot copy (no unit stride, misaligned, strides not multiples
// of 8 elements) is staged element by element into the same layout. Any M, N, K; all four
// transpose combinations.
//
// The epilogue: register 4j + r of lane 4g + t in warp w of a warpgroup holds row
// 16 w + g + 8 (r / 2), column 8 j + 2 t + r % 2 of its 64 x 128 tile (the accumulator map of
// m16n8 repeated along N, as the PTX ISA draws wgmma's D fragments).
//
// The kernel is GPU-only: wgmma, its descriptors and the async proxy have no emulator version
// (docs/emulator.md), and sm_90a code runs on sm_90 devices only. This file's nvcc object is
// built for sm_90a alone (cmake/Simt.cmake) when the build's architectures include 90; every
// other build says so through wgmma_built(), and the plan (gemm_tc.cu) refuses the kernel with
// the reason.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/gemm_tc.cuh"
#include "kernels/cuda/tensor_core.cuh"

#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace tc {
namespace {

using detail::strided_offsets;
using W = WgmmaTile;

// Stages one operand's Rows x kBK tile (rows r0.., k k0..) of the `rows` x `k` matrix at src
// (strides rs along the rows, ks along K) into the core-matrix layout of Note [wgmma's shared
// layout]: by cp.async chunks along the unit stride (`async`), else element by element. Zeros
// outside the matrix.
template <int Rows, bool KMajor, typename T>
__device__ __forceinline__ void stage_cores(T* dst, const T* src, int64_t rows, int64_t k,
                                            int64_t rs, int64_t ks, int64_t r0, int64_t k0,
                                            bool async) {
  constexpr int kBK = W::kBK;
  if (async) {
    for (int e = threadIdx.x; e < Rows * kBK / 8; e += W::kThreads) {
      const int core = e / 8, inner = e % 8;
      // K-major: cores run along K first (kBK / 8 of them), a chunk is 8 k of row `inner`;
      // MN-major: cores run along the rows first, a chunk is 8 rows at k `inner`.
      const int r = KMajor ? 8 * (core / (kBK / 8)) + inner : 8 * (core % (Rows / 8));
      const int kk = KMajor ? 8 * (core % (kBK / 8)) : 8 * (core / (Rows / 8)) + inner;
      const int64_t gr = r0 + r, gk = k0 + kk;
      const int valid =
          KMajor ? (gr < rows ? chunk_valid(gk, k) : 0) : (gk < k ? chunk_valid(gr, rows) : 0);
      cp_async_16_zfill(dst + 8 * e, valid ? src + gr * rs + gk * ks : src, 2 * valid);
    }
  } else {
    for (int e = threadIdx.x; e < Rows * kBK; e += W::kThreads) {
      // Consecutive threads take consecutive elements along the layout's 16-byte rows.
      const int r = KMajor ? e / kBK : e % Rows, kk = KMajor ? e % kBK : e / Rows;
      const int64_t gr = r0 + r, gk = k0 + kk;
      const int at = KMajor ? (r % 8) * 8 + kk % 8 + (r / 8) * 8 * kBK + (kk / 8) * 64
                            : (kk % 8) * 8 + r % 8 + (r / 8) * 64 + (kk / 8) * 8 * Rows;
      dst[at] = gr < rows && gk < k ? src[gr * rs + gk * ks] : T(0.0f);
    }
  }
}

// LBO and SBO (bytes) of a Rows x kBK tile in the layout above.
__host__ __device__ constexpr uint32_t tile_lbo(int rows, bool k_major) {
  return k_major ? 128u : uint32_t(16 * rows);
}
__host__ __device__ constexpr uint32_t tile_sbo(bool k_major) {
  return k_major ? uint32_t(16 * W::kBK) : 128u;
}

template <bool AK, bool BK, typename T>
__global__ void __launch_bounds__(W::kThreads, 2)
    gemm_wgmma_kernel(TcArgs g, const T* __restrict__ a, const T* __restrict__ b, void* c) {
#if EMBER_HAS_WGMMA
  constexpr int kStages = W::kStages, kAElems = W::kBM * W::kBK;
  constexpr int kStage = (W::kBM + W::kBN) * W::kBK;
  // The byte steps of the descriptors' start: one k16 step (2 core matrices along K), and a
  // warpgroup's 64 rows of A (8 core matrices along M).
  constexpr uint32_t kAStepK = 2 * tile_lbo(W::kBM, AK), kBStepK = 2 * tile_lbo(W::kBN, BK);
  constexpr uint32_t kAStepWg = 8 * tile_sbo(AK);
  EMBER_DYNAMIC_SHARED(T, smem);
  const GemmShape& s = g.s;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wg = warp / 4;
  for_each_item(g, [&](int64_t z, int64_t tile) {
    int64_t off[2];
    strided_offsets(s.batch_index, z, off);
    const T* az = a + off[0];
    const T* bz = b + off[1];
    const int64_t m0 = tile * W::kBM, n0 = int64_t(blockIdx.x) * W::kBN;
    const int tiles = int((s.k + W::kBK - 1) / W::kBK);
    auto stage = [&](int t) {  // fills shared stage t % kStages with K step t
      T* as = smem + (t % kStages) * kStage;
      const int64_t k0 = int64_t(t) * W::kBK;
      stage_cores<W::kBM, AK>(as, az, s.m, s.k, s.a_row, s.a_col, m0, k0, g.a_async);
      stage_cores<W::kBN, BK>(as + kAElems, bz, s.n, s.k, s.b_col, s.b_row, n0, k0, g.b_async);
    };
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
    for (int t = 0; t < kStages - 1; ++t) {
      if (t < tiles) stage(t);
      cp_async_commit();
    }
    for (int t = 0; t < tiles; ++t) {
      cp_async_wait<kStages - 2>();  // step t's copies (this thread's) have landed ...
      fence_proxy_async();           // ... are ordered before the Tensor Cores' reads ...
      __syncthreads();  // ... and everyone's; the stage refilled next was read by step t - 1,
                        // whose products every warpgroup waited for
      if (t + kStages - 1 < tiles) stage(t + kStages - 1);
      cp_async_commit();
      const T* as = smem + (t % kStages) * kStage;
      const T* bs = as + kAElems;
      const uint64_t da =
          wgmma_desc(as, tile_lbo(W::kBM, AK), tile_sbo(AK)) + ((wg * kAStepWg) >> 4);
      const uint64_t db = wgmma_desc(bs, tile_lbo(W::kBN, BK), tile_sbo(BK));
#pragma unroll
      for (int i = 0; i < 64; ++i) fence_operand(acc[i]);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < W::kBK / 16; ++kk)
        wgmma_m64n128k16<!AK, !BK, T>(acc, da + ((kk * kAStepK) >> 4), db + ((kk * kBStepK) >> 4));
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < 64; ++i) fence_operand(acc[i]);
    }
    cp_async_wait_all();
    __syncthreads();  // a next item's prologue refills stages this item's last steps read
    const int gq = lane / 4, tq = lane % 4;
    const int64_t row0 = m0 + 64 * wg + 16 * (warp % 4) + gq;
#pragma unroll
    for (int j = 0; j < W::kBN / 8; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int64_t gm = row0 + 8 * (r / 2), gn = n0 + 8 * j + 2 * tq + r % 2;
        if (gm < s.m && gn < s.n) store_c(g, c, (z * s.m + gm) * s.n + gn, acc[4 * j + r]);
      }
  });
#else
  (void)g, (void)a, (void)b, (void)c;
#endif
}

template <bool AK, bool BK, typename T>
void launch(const TcGemmPlan& p, const TcArgs& args, const void* a, const void* b, void* c,
            gpu::Stream stream) {
  auto* kernel = gemm_wgmma_kernel<AK, BK, T>;
  EMBER_SET_MAX_DYNAMIC_SHARED(kernel, W::kSharedBytes);
  EMBER_LAUNCH(kernel, dim3(p.grid[0], p.grid[1], p.grid[2]), dim3(W::kThreads), W::kSharedBytes,
               stream, args, static_cast<const T*>(a), static_cast<const T*>(b), c);
}

template <typename T>
void launch_layout(const TcGemmPlan& p, const TcArgs& args, const void* a, const void* b, void* c,
                   gpu::Stream stream) {
  if (p.a_k_major)
    p.b_k_major ? launch<true, true, T>(p, args, a, b, c, stream)
                : launch<true, false, T>(p, args, a, b, c, stream);
  else
    p.b_k_major ? launch<false, true, T>(p, args, a, b, c, stream)
                : launch<false, false, T>(p, args, a, b, c, stream);
}

}  // namespace

bool wgmma_built() {
#if !EMBER_EMULATED && defined(EMBER_WGMMA_SM90A)
  return true;
#else
  return false;
#endif
}

void gemm_wgmma(const TcGemmPlan& p, const TcArgs& args, DType in, const void* a, const void* b,
                void* c, gpu::Stream stream) {
  if (!wgmma_built())
    throw std::invalid_argument("gemm_tc: this build has no sm_90a code for the wgmma kernel");
  if (in == DType::f16)
    launch_layout<__half>(p, args, a, b, c, stream);
  else
    launch_layout<__nv_bfloat16>(p, args, a, b, c, stream);
}

}  // namespace tc
}  // namespace ember::kernels::EMBER_KERNEL_NS


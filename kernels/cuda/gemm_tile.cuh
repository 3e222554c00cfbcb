// The block tile of a register-tiled GEMM, written once for the SGEMM (kernels/cuda/gemm.cu) and
// the implicit-GEMM convolution (kernels/cuda/conv2d_implicit_gemm.cu): a convolution is this
// GEMM with a loader that gathers its operands from NCHW tensors and an epilogue that scatters
// its result back.
//
// Why it looks as it does:
// - A block computes a BM x BN tile of C; each thread a TM x TN register tile (4 x 4, 4 x 8, 8 x 4
//   or 8 x 8) made of 4 x 4 sub-tiles 4 * (BM / TM) rows (4 * (BN / TN) cols) apart, half a block
//   tile when there are two, so its A and B fragments are float4 (double2) reads of shared memory.
// - A warp covers 8 x 4 threads (8 along the tile's rows, 4 along its cols) or 4 x 8, and warps
//   tile that side first: each fragment read is then a broadcast or 128 contiguous bytes, one
//   wavefront. The 8-lane side is the one the epilogue writes contiguously (the pixels of a
//   convolution's NCHW output, the columns of a row-major C), so a warp's stores coalesce too.
// - Both operand tiles are stored reduction-major (A transposed) with rows padded by 4 elements,
//   so the fragments are contiguous and the transposing stores are free of bank conflicts.
// - The reduction advances 8 at a time through double-buffered shared memory: the next step's
//   global loads go to registers before the current step is multiplied, and one barrier per step
//   separates the buffers, so the load latency hides behind the step's FMAs.
// - Each output element is summed over the reduction in index order, one multiply-add per index,
//   whatever the tile shape or the loader: choosing a tile never changes a result (split-K, which
//   cuts the sum in pieces, is the caller's choice).
//
// A loader is what differs between the users: how a thread fetches its share of the A and B
// elements of one reduction step (strided matrix loads; the gather of each convolution direction)
// and where in the shared tiles they go. It provides
//   load(step)     fetch the elements of reduction step `step` (0, 1, ...) into registers;
//   advance()      move to the next step;
//   store(a, b)    write the fetched elements to the shared tiles a[kTileK][BM + kTilePad] and
//                  b[kTileK][BN + kTilePad].
// The epilogue, epilogue(acc, thread_tile), writes the thread's register tile where it belongs.
// Work counted (EMBER_COUNT_WORK): 2 flops per multiply-add of the whole block tile, the padded
// rows and columns included (they are computed); the loader and the epilogue count their loads
// and stores, those they skip outside the matrices not counted.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/compat.h"

// Unrolls a loop fully (the register tiles only live in registers when every index is a
// constant); the users' loaders use it too.
#if EMBER_EMULATED
#define EMBER_TILE_UNROLL _Pragma("GCC unroll 8")
#else
#define EMBER_TILE_UNROLL _Pragma("unroll")
#endif

namespace ember::kernels::EMBER_KERNEL_NS::gemm_tile {

constexpr int kTileK = 8;    // reduction positions per step
constexpr int kTilePad = 4;  // elements after each shared row

// The side of the block tile along which a warp's 8-lane side runs.
enum class WarpAlong { rows, cols };

// kUnrollStep: unroll the 8 positions of a step too, as the SGEMM always has (its light loader
// leaves the registers for it). The convolution's gathers keep more state, and there the full
// unroll makes ptxas spill (float64 backward-filter, 256 x 16 and 128 x 128, on sm_90), so it
// leaves that loop to the compiler, as it always has.
template <int BM, int BN, int TM, int TN, WarpAlong W, bool kUnrollStep>
struct BlockTile {
  static constexpr int kBM = BM, kBN = BN, kTM = TM, kTN = TN;
  static constexpr int kRowThreads = BM / TM, kColThreads = BN / TN;
  static constexpr int kThreads = kRowThreads * kColThreads;
  static constexpr bool kWarpAlongRows = W == WarpAlong::rows;
  static constexpr bool kUnroll = kUnrollStep;
  static_assert(TM % 4 == 0 && TN % 4 == 0 && TM <= 8 && TN <= 8, "4 x 4 sub-tiles, <= 2");
  static_assert(kThreads % 32 == 0 && kThreads <= 256, "block shape");
  static_assert(kWarpAlongRows ? kRowThreads % 8 == 0 && kColThreads % 4 == 0
                               : kRowThreads % 4 == 0 && kColThreads % 8 == 0,
                "whole warps of 8 x 4 (or 4 x 8) threads");
};

template <typename T, typename Tile>
struct alignas(16) TileBuffers {
  T a[2][kTileK][Tile::kBM + kTilePad];  // reduction-major: a thread's 4 rows are contiguous
  T b[2][kTileK][Tile::kBN + kTilePad];
};

// The thread's place in the block tile: its 4-row group `row` and 4-col group `col`.
template <typename Tile>
struct ThreadTile {
  int row, col;

  __device__ __forceinline__ explicit ThreadTile(int tid) {
    const int warp = tid / 32, lane = tid % 32;
    if constexpr (Tile::kWarpAlongRows) {
      constexpr int kWarpRows = Tile::kRowThreads / 8;  // warps side by side along the rows
      row = warp % kWarpRows * 8 + lane % 8;
      col = warp / kWarpRows * 4 + lane / 8;
    } else {
      constexpr int kWarpCols = Tile::kColThreads / 8;
      row = warp / kWarpCols * 4 + lane / 8;
      col = warp % kWarpCols * 8 + lane % 8;
    }
  }
  // The block-tile row of register row i, and column of register column j.
  __device__ __forceinline__ int row_of(int i) const {
    return (i / 4) * (4 * Tile::kRowThreads) + 4 * row + i % 4;
  }
  __device__ __forceinline__ int col_of(int j) const {
    return (j / 4) * (4 * Tile::kColThreads) + 4 * col + j % 4;
  }
};

// out[0..N) = p[0..N), as one or two vector loads where the type allows (p is aligned).
template <int N, typename T>
__device__ __forceinline__ void load_vec(const T* p, T* out) {
  if constexpr (std::is_same_v<T, float> && N == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else if constexpr (std::is_same_v<T, double> && N % 2 == 0) {
    EMBER_TILE_UNROLL
    for (int h = 0; h < N / 2; ++h) {
      const double2 v = reinterpret_cast<const double2*>(p)[h];
      out[2 * h] = v.x, out[2 * h + 1] = v.y;
    }
  } else {
    EMBER_TILE_UNROLL
    for (int i = 0; i < N; ++i) out[i] = p[i];
  }
}

// acc += the thread's TM x TN slice of A x B at one reduction position (a, b: that row of the
// shared tiles).
template <typename T, typename Tile>
__device__ __forceinline__ void multiply_position(const T* a, const T* b,
                                                  T (&acc)[Tile::kTM][Tile::kTN],
                                                  const ThreadTile<Tile>& t) {
  T af[Tile::kTM], bf[Tile::kTN];
  EMBER_TILE_UNROLL
  for (int h = 0; h < Tile::kTM / 4; ++h) load_vec<4>(a + t.row_of(4 * h), af + 4 * h);
  EMBER_TILE_UNROLL
  for (int h = 0; h < Tile::kTN / 4; ++h) load_vec<4>(b + t.col_of(4 * h), bf + 4 * h);
  EMBER_TILE_UNROLL
  for (int i = 0; i < Tile::kTM; ++i) {
    EMBER_TILE_UNROLL
    for (int j = 0; j < Tile::kTN; ++j) acc[i][j] += af[i] * bf[j];
  }
}

// acc += the thread's slice of one step's A tile x B tile.
template <typename T, typename Tile>
__device__ __forceinline__ void multiply_step(const T (*as)[Tile::kBM + kTilePad],
                                              const T (*bs)[Tile::kBN + kTilePad],
                                              T (&acc)[Tile::kTM][Tile::kTN],
                                              const ThreadTile<Tile>& t) {
  if constexpr (Tile::kUnroll) {
    EMBER_TILE_UNROLL
    for (int kk = 0; kk < kTileK; ++kk) multiply_position<T, Tile>(as[kk], bs[kk], acc, t);
  } else {
    for (int kk = 0; kk < kTileK; ++kk) multiply_position<T, Tile>(as[kk], bs[kk], acc, t);
  }
}

// One block tile: acc = the thread's share of A x B over `steps` reduction steps (none when
// steps <= 0, but the loader still fetches its first), then epilogue(acc, t). The loader is
// positioned at the first step; every thread of the block calls this with the same steps. Steps
// is the counter's type: int where the count fits (ptxas then needs fewer registers), int64_t
// for the SGEMM, whose K may not.
template <typename T, typename Tile, typename Steps, typename Loader, typename Epilogue>
__device__ __forceinline__ void block_tile_gemm(TileBuffers<T, Tile>& sm, const ThreadTile<Tile>& t,
                                                Steps steps, Loader& ld, const Epilogue& epilogue) {
  T acc[Tile::kTM][Tile::kTN];
  EMBER_TILE_UNROLL
  for (int i = 0; i < Tile::kTM; ++i) {
    EMBER_TILE_UNROLL
    for (int j = 0; j < Tile::kTN; ++j) acc[i][j] = T(0);
  }
  ld.load(Steps(0));
  ld.store(sm.a[0], sm.b[0]);
  __syncthreads();
  for (Steps it = 0; it < steps; ++it) {
    const int cur = int(it & 1);
    const bool more = it + 1 < steps;
    if (more) {  // the next step's loads are in flight while this one is multiplied
      ld.advance();
      ld.load(it + 1);
    }
    multiply_step<T, Tile>(sm.a[cur], sm.b[cur], acc, t);
    if (more) ld.store(sm.a[cur ^ 1], sm.b[cur ^ 1]);  // last read before the previous barrier
    __syncthreads();
  }
  EMBER_COUNT_WORK(2 * int64_t(steps > 0 ? steps : 0) * kTileK * Tile::kTM * Tile::kTN, 0);
  epilogue(acc, t);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS::gemm_tile

// Device helpers for kernels that reduce along rows with one warp or one block per row (softmax,
// cross entropy): the row layout chosen from the row's length, and the max/sum combined across
// the row's threads. Included by .cu files after kernels/cuda/compat.h.
#pragma once

#include <cstdint>

#include "kernels/cuda/block_reduce.cuh"

namespace ember::kernels::EMBER_KERNEL_NS::detail {

constexpr int kRowBlock = 256;  // threads per block for either layout
// Rows up to this long get one warp each (8 per block); longer rows get a whole block.
constexpr int64_t kWarpRowMax = 1024;

struct MaxOp {
  // NaN never replaces the running max, as std::max(m, x) on the CPU; a NaN input still makes
  // the row's sum NaN.
  template <typename V>
  __device__ __forceinline__ V operator()(V a, V b) const {
    return a < b ? b : a;
  }
};

// Combines v over the threads of a row: the 32 lanes of a warp (kWarp) or the whole block
// (blockDim.x a multiple of 32). Every thread of the row gets the result; every thread of the
// block must call it (block layout: it holds barriers).
template <bool kWarp, typename V, typename Op>
__device__ __forceinline__ V row_reduce(V v, Op op) {
  for (int off = 16; off > 0; off /= 2) v = op(v, __shfl_xor_sync(kFullMask, v, off));
  if constexpr (kWarp) {
    return v;
  } else {
    __shared__ V partial[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = partial[0];
    for (int w = 1; w < warps; ++w) v = op(v, partial[w]);
    __syncthreads();  // partial[] is reused by the next call
    return v;
  }
}

// The row a thread works on, its index within the row and the row's thread count, for the two
// layouts: rows of blockIdx.x * 8 + warp (kWarp) or one row per block, striding by the grid.
template <bool kWarp>
struct RowLayout {
  __device__ __forceinline__ static int64_t first_row() {
    return kWarp ? int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32 : blockIdx.x;
  }
  __device__ __forceinline__ static int64_t row_step() {
    return kWarp ? int64_t(gridDim.x) * (blockDim.x / 32) : gridDim.x;
  }
  __device__ __forceinline__ static int lane() { return kWarp ? threadIdx.x % 32 : threadIdx.x; }
  __device__ __forceinline__ static int width() { return kWarp ? 32 : blockDim.x; }
};

// Blocks for `rows` rows in either layout, capped for the grid-stride loop over rows.
inline unsigned row_blocks(int64_t rows, bool warp_rows) {
  const int64_t per = warp_rows ? kRowBlock / 32 : 1;
  const int64_t b = (rows + per - 1) / per;
  return static_cast<unsigned>(b < 1 ? 1 : (b < 4096 ? b : 4096));
}

}  // namespace ember::kernels::EMBER_KERNEL_NS::detail

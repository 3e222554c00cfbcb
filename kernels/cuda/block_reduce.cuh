// Warp and block reductions of any small trivially copyable value (a number, or a struct such as
// Welford's (n, mean, m2)) under any combine functor: a shuffle tree inside each warp, then the
// warps' partials combined by the first warp. Included by .cu files after kernels/cuda/compat.h.
//
// Note [block_reduce order]: floating-point combines are not associative, so the order is part
// of the result, and emulated training is compared bit for bit with a recorded run
// (golden_losses_emu). The order is fixed:
//   warp:  for off = 16, 8, 4, 2, 1, lane l becomes op(own, lane l + off's) -- the lower lane's
//          value is always the left operand. Lane 0 ends with the warp's result (a lane whose
//          partner is past lane 31 gets its own value back, and its result is not used).
//   block: lane 0 of warp w writes partial[w]; warp 0 reloads lane l < warps from partial[l]
//          (the others from `identity`) and runs the same warp tree; partial[0] goes to every
//          thread.
// Change the order only together with the recorded losses, and say so in the commit.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS::detail {

constexpr unsigned kFullMask = 0xffffffffu;

struct SumOp {
  template <typename V>
  __device__ __forceinline__ V operator()(V a, V b) const {
    return a + b;
  }
};

// __shfl_down_sync of any trivially copyable V, moved word by word (8-byte words when V's size
// allows, else 4-byte ones): a shuffle copies bits, so the value arrives unchanged.
// requires: every lane of the warp calls it (full mask).
template <typename V>
__device__ __forceinline__ V shfl_down(V v, int offset) {
  static_assert(std::is_trivially_copyable_v<V>, "shfl_down moves trivially copyable values");
  using Word = std::conditional_t<sizeof(V) % 8 == 0, unsigned long long, unsigned>;
  constexpr int kWords = static_cast<int>((sizeof(V) + sizeof(Word) - 1) / sizeof(Word));
  Word w[kWords] = {};
  memcpy(w, &v, sizeof(V));
  for (int i = 0; i < kWords; ++i) w[i] = __shfl_down_sync(kFullMask, w[i], offset);
  memcpy(&v, w, sizeof(V));
  return v;
}

// Combines v over the 32 lanes of a converged warp (Note [block_reduce order]).
// ensures: lane 0 holds the warp's result; other lanes hold partial results.
template <typename V, typename Op>
__device__ __forceinline__ V warp_reduce(V v, Op op) {
  for (int off = 16; off > 0; off /= 2) v = op(v, shfl_down(v, off));
  return v;
}

// Shared storage for the per-warp partials: raw bytes, so V may have default member
// initialisers (a __shared__ variable cannot be constructed).
template <typename V>
struct alignas(V) WarpPartials {
  unsigned char bytes[32 * sizeof(V)];
};

// Combines v over the block (Note [block_reduce order]). `identity` is what the first warp's
// lanes past the number of warps start from: op's neutral value (0 for a sum).
// requires: blockDim.x a multiple of 32 and at most 1024; every thread of the block calls it
//           (it holds barriers).
// ensures:  every thread gets the block's result.
template <typename V, typename Op>
__device__ V block_reduce(V v, Op op, V identity = V{}) {
  __shared__ WarpPartials<V> storage;
  V* partial = reinterpret_cast<V*>(storage.bytes);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_reduce(v, op);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = warp_reduce(lane < warps ? partial[lane] : identity, op);
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  const V total = partial[0];
  __syncthreads();  // partial[] is reused by the next call
  return total;
}

}  // namespace ember::kernels::EMBER_KERNEL_NS::detail

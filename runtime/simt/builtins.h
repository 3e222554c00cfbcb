// The CUDA built-ins a kernel sees under the SIMT emulator: threadIdx and friends, block
// barriers, warp collectives and dynamic shared memory. Barriers and collectives are macros that
// pass __FILE__/__LINE__, so the emulator's reports name the line a thread waits at.
//
// requires (for every function here): called from a kernel running under simt::run_launch.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/simt/vector_types.h"

// Set by the emulator before it resumes a thread; valid only inside a kernel.
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local uint3 blockDim;
extern thread_local uint3 gridDim;
constexpr int warpSize = 32;

namespace ember::simt {

enum class BarrierKind : int { Plain, Count, And, Or };
// Mma and Ldmatrix are the warp all-gathers of the Tensor Core instructions
// (runtime/simt/tensor_core.h).
enum class WarpOp : int {
  Sync,
  ShflIdx,
  ShflUp,
  ShflDown,
  ShflXor,
  Ballot,
  Any,
  All,
  Mma,
  Ldmatrix
};

// Suspends the calling thread until every thread of the block reaches a barrier; returns the
// reduction of `pred` over the block for Count/And/Or (0 for Plain).
int block_barrier(BarrierKind kind, int pred, const char* file, int line);
// Suspends the calling lane until every lane named in `mask` reaches the same collective; returns
// this lane's result (the source lane's `value` for shuffles, the vote for ballot/any/all).
uint64_t warp_collective(WarpOp op, uint32_t mask, uint64_t value, int param, int width,
                         const char* file, int line);
// Lanes of the calling thread's warp that have not exited.
uint32_t active_mask();
// The current block's dynamic shared memory (poisoned with 0xFF bytes = NaN before each block).
unsigned char* dynamic_shared_memory();

template <typename T>
inline T shfl(WarpOp op, const char* file, int line, unsigned mask, T var, int param,
              int width = warpSize) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                "warp shuffles move trivially copyable values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  uint64_t r = warp_collective(op, mask, bits, param, width, file, line);
  T out;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}
inline unsigned vote(WarpOp op, const char* file, int line, unsigned mask, int pred) {
  return static_cast<unsigned>(warp_collective(op, mask, pred != 0, 0, warpSize, file, line));
}
struct SyncWarp {
  const char* file;
  int line;
  void operator()(unsigned mask = 0xffffffffu) const {
    warp_collective(WarpOp::Sync, mask, 0, 0, warpSize, file, line);
  }
};

}  // namespace ember::simt

#define __syncthreads() \
  (void)::ember::simt::block_barrier(::ember::simt::BarrierKind::Plain, 0, __FILE__, __LINE__)
#define __syncthreads_count(pred) \
  ::ember::simt::block_barrier(::ember::simt::BarrierKind::Count, (pred), __FILE__, __LINE__)
#define __syncthreads_and(pred) \
  ::ember::simt::block_barrier(::ember::simt::BarrierKind::And, (pred), __FILE__, __LINE__)
#define __syncthreads_or(pred) \
  ::ember::simt::block_barrier(::ember::simt::BarrierKind::Or, (pred), __FILE__, __LINE__)
#define __syncwarp(...) ::ember::simt::SyncWarp{__FILE__, __LINE__}(__VA_ARGS__)
#define __shfl_sync(...) \
  ::ember::simt::shfl(::ember::simt::WarpOp::ShflIdx, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) \
  ::ember::simt::shfl(::ember::simt::WarpOp::ShflUp, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) \
  ::ember::simt::shfl(::ember::simt::WarpOp::ShflDown, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) \
  ::ember::simt::shfl(::ember::simt::WarpOp::ShflXor, __FILE__, __LINE__, __VA_ARGS__)
#define __ballot_sync(mask, pred) \
  ::ember::simt::vote(::ember::simt::WarpOp::Ballot, __FILE__, __LINE__, (mask), (pred))
#define __any_sync(mask, pred) \
  static_cast<int>(            \
      ::ember::simt::vote(::ember::simt::WarpOp::Any, __FILE__, __LINE__, (mask), (pred)))
#define __all_sync(mask, pred) \
  static_cast<int>(            \
      ::ember::simt::vote(::ember::simt::WarpOp::All, __FILE__, __LINE__, (mask), (pred)))
#define __activemask() ::ember::simt::active_mask()

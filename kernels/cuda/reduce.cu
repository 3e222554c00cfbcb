// Row reductions: one block per output row (grid-stride over rows); each thread folds a strided
// slice of the row, then warp shuffles and a shared-memory stage combine the threads.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/reduce.cuh"

#include <stdexcept>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using gpu_types::ReduceOp;
using gpu_types::Scalar;
using namespace detail;

constexpr unsigned kFull = 0xffffffffu;

// The sum over the block, returned to every thread. blockDim.x is a multiple of 32.
template <typename Acc>
__device__ Acc block_sum(Acc v) {
  __shared__ Acc partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(kFull, v, off);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? partial[lane] : Acc(0);
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(kFull, v, off);
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  const Acc total = partial[0];
  __syncthreads();  // partial[] is reused by the next call
  return total;
}

// Whether (v, i) replaces (best, bi) as the extreme: NaN wins, then the larger (kMax) or smaller
// value, then the lower index; bi < 0 means "nothing yet".
template <typename T>
__device__ __forceinline__ bool better(bool is_max, T v, int64_t i, T best, int64_t bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
  const bool v_nan = v != v, best_nan = best != best;
  if (best_nan) return v_nan && i < bi;
  if (v_nan) return true;
  if (v == best) return i < bi;
  return is_max ? v > best : v < best;
}

// Combines every thread's (best, idx) into the block's; the result reaches every thread.
template <typename T>
__device__ void block_extreme(bool is_max, T& best, int64_t& idx) {
  __shared__ T vals[32];
  __shared__ int64_t idxs[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (int off = 16; off > 0; off /= 2) {
    const T v = __shfl_down_sync(kFull, best, off);
    const int64_t i = __shfl_down_sync(kFull, idx, off);
    if (better(is_max, v, i, best, idx)) best = v, idx = i;
  }
  if (lane == 0) vals[warp] = best, idxs[warp] = idx;
  __syncthreads();
  if (warp == 0) {
    best = lane < warps ? vals[lane] : T(0);
    idx = lane < warps ? idxs[lane] : -1;
    for (int off = 16; off > 0; off /= 2) {
      const T v = __shfl_down_sync(kFull, best, off);
      const int64_t i = __shfl_down_sync(kFull, idx, off);
      if (better(is_max, v, i, best, idx)) best = v, idx = i;
    }
    if (lane == 0) vals[0] = best, idxs[0] = idx;
  }
  __syncthreads();
  best = vals[0];
  idx = idxs[0];
  __syncthreads();
}

// Sums accumulate in double for floating T (as the CPU kernels do) and in int64 for integer
// and bool T, whose sum is int64; extremes are compared in T, or in int64 for integer T (which
// the warp shuffles move).
template <typename T>
__global__ void reduce_rows_kernel(ReduceOp op, int64_t rows, int64_t n, int64_t correction,
                                   const T* __restrict__ in, void* __restrict__ out) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  using Acc = std::conditional_t<kFloat, double, int64_t>;
  using V = std::conditional_t<kFloat, T, int64_t>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * n;
    if (op == ReduceOp::sum || op == ReduceOp::mean || op == ReduceOp::var || op == ReduceOp::std) {
      Acc s = 0;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += static_cast<Acc>(x[i]);
      s = block_sum(s);
      if constexpr (kFloat) {
        double r = op == ReduceOp::sum ? s : s / static_cast<double>(n);
        if (op == ReduceOp::var || op == ReduceOp::std) {
          const double mean = r;
          double q = 0.0;
          for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            const double d = static_cast<double>(x[i]) - mean;
            q += d * d;
          }
          q = block_sum(q);
          const int64_t dof = n - correction > 0 ? n - correction : 0;
          r = q / static_cast<double>(dof);
          if (op == ReduceOp::std) r = sqrt(r);
        }
        if (threadIdx.x == 0) static_cast<T*>(out)[row] = static_cast<T>(r);
      } else {
        if (threadIdx.x == 0) static_cast<int64_t*>(out)[row] = s;
      }
    } else {
      const bool is_max = op == ReduceOp::amax || op == ReduceOp::argmax;
      V best = V(0);
      int64_t idx = -1;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const V v = static_cast<V>(x[i]);
        if (better(is_max, v, i, best, idx)) best = v, idx = i;
      }
      block_extreme(is_max, best, idx);
      if (threadIdx.x == 0) {
        if (op == ReduceOp::argmax || op == ReduceOp::argmin)
          static_cast<int64_t*>(out)[row] = idx;
        else
          static_cast<T*>(out)[row] = static_cast<T>(best);
      }
    }
  }
}

template <typename T>
void launch(ReduceOp op, int64_t rows, int64_t n, int64_t correction, const void* in, void* out,
            gpu::Stream stream) {
  // Enough threads to cover short rows without idle warps, at most kBlock.
  int threads = 32;
  while (threads < kBlock && threads < n) threads *= 2;
  const dim3 grid(static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks));
  EMBER_LAUNCH(reduce_rows_kernel<T>, grid, dim3(threads), 0, stream, op, rows, n, correction,
               static_cast<const T*>(in), out);
}

}  // namespace

void reduce_rows(ReduceOp op, Scalar t, int64_t rows, int64_t n, int64_t correction, const void* in,
                 void* out, gpu::Stream stream) {
  const bool floating = t == Scalar::f32 || t == Scalar::f64;
  if (!floating && op != ReduceOp::sum && op != ReduceOp::amax && op != ReduceOp::amin &&
      op != ReduceOp::argmax && op != ReduceOp::argmin)
    throw std::invalid_argument("reduce_rows: mean, var and std need float32 or float64");
  if (rows == 0) return;
  switch (t) {
    case Scalar::f32:
      return launch<float>(op, rows, n, correction, in, out, stream);
    case Scalar::f64:
      return launch<double>(op, rows, n, correction, in, out, stream);
    case Scalar::i32:
      return launch<int32_t>(op, rows, n, correction, in, out, stream);
    case Scalar::i64:
      return launch<int64_t>(op, rows, n, correction, in, out, stream);
    case Scalar::u8:
      return launch<uint8_t>(op, rows, n, correction, in, out, stream);
    case Scalar::b8:
      return launch<bool>(op, rows, n, correction, in, out, stream);
  }
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

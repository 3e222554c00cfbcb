// Reductions: one block per output element (grid-stride over them); each thread folds every
// blockDim.x-th element of that output's reduced index space, read through the input's strides,
// then warp shuffles and a shared-memory stage combine the threads. Few long rows are split
// across blocks (Note [Split reductions]).
#include "kernels/cuda/compat.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"

#include <stdexcept>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

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

// A running extreme and its index; index < 0 means "nothing yet" (the block reduction's
// identity is {0, -1}).
template <typename V>
struct Extreme {
  V value;
  int64_t index;
};
// `b` when it is the better extreme, else `a` (block_reduce: Note [block_reduce order]).
struct ExtremeOp {
  bool is_max;
  template <typename V>
  __device__ __forceinline__ Extreme<V> operator()(Extreme<V> a, Extreme<V> b) const {
    return better(is_max, b.value, b.index, a.value, a.index) ? b : a;
  }
};

// Sums accumulate in double for floating T (as the CPU kernels do; half types load as float) and in
// int64 for integer and bool T, whose sum is int64; extremes are compared in T, or in int64 for
// integer T (which the warp shuffles move). The input offset of output `row` (row-major over the
// kept dims) and of element i of its reduced index space (row-major over the reduced dims).
__device__ __forceinline__ int64_t kept_offset(const ReduceShape& s, int64_t row) {
  int64_t off = 0;
  for (int d = s.kept_ndim - 1; d >= 0; --d) {
    off += (row % s.kept_sizes[d]) * s.kept_strides[d];
    row /= s.kept_sizes[d];
  }
  return off;
}
__device__ __forceinline__ int64_t reduced_offset(const ReduceShape& s, int64_t i) {
  if (s.reduced_ndim == 1) return i * s.reduced_strides[0];
  int64_t off = 0;
  for (int d = s.reduced_ndim - 1; d >= 0; --d) {
    off += (i % s.reduced_sizes[d]) * s.reduced_strides[d];
    i /= s.reduced_sizes[d];
  }
  return off;
}

// Thread 0 stores a row's extreme: its index (argmax, argmin) or its value (amax, amin).
template <typename T, typename V>
__device__ __forceinline__ void store_extreme(ReduceOp op, const Extreme<V>& e, void* out,
                                              int64_t row) {
  if (threadIdx.x != 0) return;
  if (op == ReduceOp::argmax || op == ReduceOp::argmin)
    static_cast<int64_t*>(out)[row] = e.index;
  else
    static_cast<T*>(out)[row] = narrow<T>(e.value);
}

template <typename T>
__global__ void reduce_kernel(ReduceOp op, ReduceShape shape, int64_t rows, int64_t n,
                              const T* __restrict__ in, void* __restrict__ out) {
  using C = compute_t<T>;  // float for the half types
  constexpr bool kFloat = std::is_floating_point_v<C>;
  using Acc = std::conditional_t<kFloat, double, int64_t>;
  using V = std::conditional_t<kFloat, C, int64_t>;
  const int64_t correction = shape.correction;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* base = in + kept_offset(shape, row);
    auto x = [&](int64_t i) { return static_cast<C>(base[reduced_offset(shape, i)]); };
    if (op == ReduceOp::sum || op == ReduceOp::mean || op == ReduceOp::var || op == ReduceOp::std) {
      Acc s = 0;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += static_cast<Acc>(x(i));
      s = block_reduce(s, SumOp());
      if constexpr (kFloat) {
        double r = op == ReduceOp::sum ? s : s / static_cast<double>(n);
        if (op == ReduceOp::var || op == ReduceOp::std) {
          const double mean = r;
          double q = 0.0;
          for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            const double d = static_cast<double>(x(i)) - mean;
            q += d * d;
          }
          q = block_reduce(q, SumOp());
          const int64_t dof = n - correction > 0 ? n - correction : 0;
          r = q / static_cast<double>(dof);
          if (op == ReduceOp::std) r = sqrt(r);
        }
        if (threadIdx.x == 0) static_cast<T*>(out)[row] = narrow<T>(r);
      } else {
        if (threadIdx.x == 0) static_cast<int64_t*>(out)[row] = s;
      }
    } else {
      const ExtremeOp better_of{op == ReduceOp::amax || op == ReduceOp::argmax};
      const Extreme<V> none{V(0), -1};
      Extreme<V> e = none;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        e = better_of(e, Extreme<V>{static_cast<V>(x(i)), i});
      e = block_reduce(e, better_of, none);
      store_extreme<T>(op, e, out, row);
    }
  }
}

// Note [Split reductions]: one block per output row leaves the GPU idle when there are few rows
// (a full sum of 64M floats ran on one multiprocessor, at 2.5 GB/s on an H200). A row of at least
// kSplitMin elements, when there are fewer than kSplitBlocks rows, is cut into `parts` slices of
// `chunk` elements: reduce_parts_kernel reduces each slice to a partial in the workspace (double
// or int64 sums, extremes with their index in the row), and reduce_finish_kernel folds each
// row's partials, in a fixed order (Note [block_reduce order]), so the result is deterministic.
// var and std take two rounds: the sum, for the mean; then the squared deviations from it.
constexpr int64_t kSplitMin = int64_t{1} << 15;
constexpr int64_t kSplitBlocks = 1024;

struct SplitPlan {
  int64_t parts = 1, chunk = 0;
};

SplitPlan split_plan(int64_t rows, int64_t n) {
  SplitPlan p;
  if (n < kSplitMin || rows >= kSplitBlocks) return p;
  const int64_t want = (kSplitBlocks + rows - 1) / rows;  // blocks per row for a full grid
  const int64_t most = (n + 8 * kBlock - 1) / (8 * kBlock);  // at least 8 elements per thread
  p.parts = want < most ? want : most;
  p.chunk = (n + p.parts - 1) / p.parts;
  return p;
}

// Bytes per partial (the largest: Extreme<double> or Extreme<int64_t>), then one double per row
// for the means of var and std.
constexpr size_t kPartialBytes = 16;

__device__ __forceinline__ bool is_extreme(ReduceOp op) {
  return op == ReduceOp::amax || op == ReduceOp::amin || op == ReduceOp::argmax ||
         op == ReduceOp::argmin;
}

// Block b reduces slice b % parts of row b / parts to partials[b]; with `mean`, the sum of the
// squared deviations from mean[row] instead of the sum.
template <typename T>
__global__ void reduce_parts_kernel(ReduceOp op, ReduceShape shape, int64_t rows, int64_t n,
                                    int64_t parts, int64_t chunk, const T* __restrict__ in,
                                    const double* __restrict__ mean, void* __restrict__ partials) {
  using C = compute_t<T>;
  constexpr bool kFloat = std::is_floating_point_v<C>;
  using Acc = std::conditional_t<kFloat, double, int64_t>;
  using V = std::conditional_t<kFloat, C, int64_t>;
  for (int64_t b = blockIdx.x; b < rows * parts; b += gridDim.x) {
    const int64_t row = b / parts, begin = b % parts * chunk;
    const int64_t end = begin + chunk < n ? begin + chunk : n;
    const T* base = in + kept_offset(shape, row);
    auto x = [&](int64_t i) { return static_cast<C>(base[reduced_offset(shape, i)]); };
    if (is_extreme(op)) {
      const ExtremeOp better_of{op == ReduceOp::amax || op == ReduceOp::argmax};
      const Extreme<V> none{V(0), -1};
      Extreme<V> e = none;
      for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
        e = better_of(e, Extreme<V>{static_cast<V>(x(i)), i});
      e = block_reduce(e, better_of, none);
      if (threadIdx.x == 0) static_cast<Extreme<V>*>(partials)[b] = e;
    } else {
      Acc s = 0;
      if (mean == nullptr) {
        for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) s += static_cast<Acc>(x(i));
      } else if constexpr (kFloat) {
        const double m = mean[row];
        for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
          const double d = static_cast<double>(x(i)) - m;
          s += d * d;
        }
      }
      s = block_reduce(s, SumOp());
      if (threadIdx.x == 0) static_cast<Acc*>(partials)[b] = s;
    }
  }
}

// One block per row folds the row's `parts` partials. For var and std, the first round
// (deviations false) writes the row's mean to `mean`; the second writes the result.
template <typename T>
__global__ void reduce_finish_kernel(ReduceOp op, int64_t rows, int64_t n, int64_t parts,
                                     int64_t correction, const void* __restrict__ partials,
                                     double* __restrict__ mean, bool deviations,
                                     void* __restrict__ out) {
  using C = compute_t<T>;
  constexpr bool kFloat = std::is_floating_point_v<C>;
  using Acc = std::conditional_t<kFloat, double, int64_t>;
  using V = std::conditional_t<kFloat, C, int64_t>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    if (is_extreme(op)) {
      const ExtremeOp better_of{op == ReduceOp::amax || op == ReduceOp::argmax};
      const Extreme<V> none{V(0), -1};
      const auto* p = static_cast<const Extreme<V>*>(partials) + row * parts;
      Extreme<V> e = none;
      for (int64_t j = threadIdx.x; j < parts; j += blockDim.x) e = better_of(e, p[j]);
      e = block_reduce(e, better_of, none);
      store_extreme<T>(op, e, out, row);
      continue;
    }
    const auto* p = static_cast<const Acc*>(partials) + row * parts;
    Acc s = 0;
    for (int64_t j = threadIdx.x; j < parts; j += blockDim.x) s += p[j];
    s = block_reduce(s, SumOp());
    if (threadIdx.x != 0) continue;
    if constexpr (kFloat) {
      const bool spread = op == ReduceOp::var || op == ReduceOp::std;
      if (spread && !deviations) {
        mean[row] = s / static_cast<double>(n);
        continue;
      }
      double r = op == ReduceOp::sum ? s : s / static_cast<double>(n);
      if (spread) {
        const int64_t dof = n - correction > 0 ? n - correction : 0;
        r = s / static_cast<double>(dof);
        if (op == ReduceOp::std) r = sqrt(r);
      }
      static_cast<T*>(out)[row] = narrow<T>(r);
    } else {
      static_cast<int64_t*>(out)[row] = s;
    }
  }
}

// Enough threads to cover `n` without idle warps, at most kBlock.
int threads_for(int64_t n) {
  int threads = 32;
  while (threads < kBlock && threads < n) threads *= 2;
  return threads;
}

unsigned grid_for(int64_t blocks) {
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <typename T>
void launch(ReduceOp op, const ReduceShape& s, int64_t rows, int64_t n, const void* in, void* out,
            void* workspace, gpu::Stream stream) {
  const SplitPlan plan = split_plan(rows, n);
  const T* x = static_cast<const T*>(in);
  if (plan.parts == 1) {
    EMBER_LAUNCH(reduce_kernel<T>, dim3(grid_for(rows)), dim3(threads_for(n)), 0, stream, op, s,
                 rows, n, x, out);
    return;
  }
  if (workspace == nullptr)
    throw std::invalid_argument(
        "reduce: a split reduction needs reduce_workspace_bytes of workspace, got none");
  const int64_t blocks = rows * plan.parts;
  auto* partials = workspace;
  auto* mean = reinterpret_cast<double*>(static_cast<unsigned char*>(workspace) +
                                         static_cast<size_t>(blocks) * kPartialBytes);
  const bool spread = op == ReduceOp::var || op == ReduceOp::std;
  for (bool deviations : {false, true}) {
    if (deviations && !spread) break;
    EMBER_LAUNCH(reduce_parts_kernel<T>, dim3(grid_for(blocks)), dim3(kBlock), 0, stream, op, s,
                 rows, n, plan.parts, plan.chunk, x, deviations ? mean : nullptr, partials);
    EMBER_LAUNCH(reduce_finish_kernel<T>, dim3(grid_for(rows)), dim3(threads_for(plan.parts)), 0,
                 stream, op, rows, n, plan.parts, s.correction, partials, mean, deviations, out);
  }
}

}  // namespace

size_t reduce_workspace_bytes(ReduceOp, DType, const ReduceShape& s) {
  const int64_t rows = s.kept_numel();
  const SplitPlan plan = split_plan(rows, s.reduced_numel());
  if (plan.parts == 1) return 0;
  return static_cast<size_t>(rows * plan.parts) * kPartialBytes +
         static_cast<size_t>(rows) * sizeof(double);
}

void reduce(ReduceOp op, DType t, const ReduceShape& s, const void* in, void* out, void* workspace,
            gpu::Stream stream) {
  if (!is_floating(t) && reduce_needs_floating(op))
    throw std::invalid_argument("reduce: mean, var and std need a floating dtype");
  const int64_t rows = s.kept_numel(), n = s.reduced_numel();
  if (rows == 0) return;
  switch (t) {
    case DType::f32:
      return launch<float>(op, s, rows, n, in, out, workspace, stream);
    case DType::f64:
      return launch<double>(op, s, rows, n, in, out, workspace, stream);
    case DType::i32:
      return launch<int32_t>(op, s, rows, n, in, out, workspace, stream);
    case DType::i64:
      return launch<int64_t>(op, s, rows, n, in, out, workspace, stream);
    case DType::u8:
      return launch<uint8_t>(op, s, rows, n, in, out, workspace, stream);
    case DType::b8:
      return launch<bool>(op, s, rows, n, in, out, workspace, stream);
    case DType::f16:
      return launch<__half>(op, s, rows, n, in, out, workspace, stream);
    case DType::bf16:
      return launch<__nv_bfloat16>(op, s, rows, n, in, out, workspace, stream);
  }
  throw std::invalid_argument("reduce: unknown dtype");
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

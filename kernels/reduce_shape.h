// The plain parameters of the reductions (sum, mean, extremes and their indices, var, std),
// shared by the CPU and GPU kernels and by ops/.
#pragma once

#include <cstdint>

#include "kernels/elementwise_shape.h"
#include "runtime/dtype.h"

namespace ember::kernels {

enum class ReduceOp : uint8_t { sum, mean, amax, amin, argmax, argmin, var, std };

// One output element per index of the kept dims, reducing over the reduced dims; sizes and
// strides in elements of the input. Output k (row-major over the kept dims) is written
// contiguous; arg reductions give the row-major index within the reduced dims.
struct ReduceShape {
  int kept_ndim = 0, reduced_ndim = 0;
  int64_t kept_sizes[kMaxDims] = {}, kept_strides[kMaxDims] = {};
  int64_t reduced_sizes[kMaxDims] = {}, reduced_strides[kMaxDims] = {};
  int64_t correction = 1;  // var/std: divide by max(n - correction, 0)

  int64_t kept_numel() const {
    int64_t n = 1;
    for (int d = 0; d < kept_ndim; ++d) n *= kept_sizes[d];
    return n;
  }
  int64_t reduced_numel() const {
    int64_t n = 1;
    for (int d = 0; d < reduced_ndim; ++d) n *= reduced_sizes[d];
    return n;
  }
};

// The kernel: reduce(op, t, shape, in, out, workspace, stream), with
// reduce_workspace_bytes(op, t, shape) bytes of workspace (0 on the cpu).
// requires: mean/var/std: t floating; extremes need a non-empty reduced space.
// ensures:  out[k] = op over the reduced elements of output k. Sums accumulate in double
//           (floating t) or int64; var/std divide the sum of squared deviations from the mean by
//           max(n - correction, 0); max/min propagate NaN; argmax/argmin give the index of the
//           first extreme (a NaN counts as the extreme). The cpu splits few long reductions into
//           chunks merged in order (Welford/Chan for var); a GPU runs one block per output,
//           and splits few long rows across blocks (Note [Split reductions] in
//           kernels/cuda/reduce.cu), merged in order too.

// Indices are int64, integer and bool sums are int64; the rest keep the input's dtype.
inline DType reduce_result_dtype(ReduceOp op, DType t) {
  if (op == ReduceOp::argmax || op == ReduceOp::argmin) return DType::i64;
  if (op == ReduceOp::sum && !is_floating(t)) return DType::i64;
  return t;
}

inline bool reduce_needs_floating(ReduceOp op) {
  return op == ReduceOp::mean || op == ReduceOp::var || op == ReduceOp::std;
}

}  // namespace ember::kernels

// CPU kernels for reductions: raw host pointers, element strides, one input dtype per call.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/dtype.h"

namespace ember::kernels::cpu {

enum class ReduceOp : uint8_t { sum, mean, amax, amin, argmax, argmin, var, std };

// The input viewed as kept dims x reduced dims (both in the input's dim order), with the
// input's stride of each, in elements. The output is contiguous over the kept dims.
struct ReduceShape {
  std::vector<int64_t> kept_sizes, kept_strides;
  std::vector<int64_t> reduced_sizes, reduced_strides;
  int64_t correction = 1;  // var/std: divide by max(n - correction, 0)
};

// Output dtype of `op` on input dtype `t`: sum of integers/bool -> int64; argmax/argmin ->
// int64; everything else keeps t.
DType reduce_result_dtype(ReduceOp op, DType t);

// out[k] = op over the reduced elements of kept position k (row-major over kept_sizes).
// requires: in of dtype t (f32, f64, i32, i64, u8, bool; mean/var/std: f32/f64 only), out of
//           reduce_result_dtype(op, t); amax/amin/argmax/argmin: at least one reduced element.
// ensures:  sums accumulate in double (floating) or int64; var/std use Welford's update in
//           double; max/min propagate NaN; argmax/argmin give the first extreme's index in
//           row-major order over reduced_sizes (a NaN counts as the extreme).
void reduce_cpu(ReduceOp op, DType t, const ReduceShape& shape, const void* in, void* out);

}  // namespace ember::kernels::cpu

// The plain parameters of the sorting and scanning kernels, shared by the CPU and GPU kernels
// and by ops/: sort/argsort/topk/kthvalue/unique/randperm sort rows; cumsum/cumprod scan along a
// dim.
#pragma once

#include <cstdint>

namespace ember::kernels {

// `rows` contiguous rows of `n` keys each.
struct SortShape {
  int64_t rows = 1, n = 0;
  bool descending = false;
};

// The kernels (kernels/kernel_table.h):
//   sort_workspace_bytes(t, s)   scratch memory sort_rows needs on the device (0 on the cpu).
//   sort_rows(t, s, keys, sorted, indices, workspace, bytes)
//       Sorts each row of `keys` (rows x n, contiguous, dtype t): sorted[r, j] is the row's j-th
//       key in ascending (or descending) order and indices[r, j] (int64) its position in the row.
// requires: t f32, f64, f16, bf16, i32 or i64 (the cpu also u8 and bool); `sorted` may be null
//           (positions only); sorted and indices do not overlap keys.
// ensures:  stable in both directions: equal keys keep their order of position. NaN sorts above
//           every number (last ascending, first descending), as in PyTorch; -0 and +0 are equal.
//           The same result on every device.

// A scan along the middle dim of a contiguous [outer, n, inner] block, from its first element
// or, when reverse, from its last.
enum class ScanOp : uint8_t { sum, prod };
struct ScanShape {
  int64_t outer = 1, n = 0, inner = 1;
  bool reverse = false;
};

// The kernels:
//   scan(op, t, s, in, out)
//       out[o, i, j] = in[o, 0, j] (op) ... (op) in[o, i, j]: inclusive cumulative sums or products
//       (reverse: in[o, i, j] (op) ... (op) in[o, n - 1, j], the gradient of a cumulative sum).
//   cumprod_backward(t, s, x, g, dx)
//       dx[o, i, j] = sum over k >= i of g[o, k, j] * prod over m <= k, m != i of x[o, m, j]: the
//       gradient of cumprod, exact when x has zeros (a reverse linear recurrence, no division).
// requires: scan: t any dtype; out is int64 for integer and bool t (sum and
//           prod), else of dtype t. cumprod_backward: t float32 or float64 (ops/ widens the half types), all three of dtype t.
// ensures:  floating scans accumulate in double (float16/bfloat16/float32 round once per
//           output), integers in int64 with wrap-around; cumprod_backward's prefix products round
//           through t once. The same values on every device, up to the order of a GPU's
//           in-block scan of a long innermost row (double sums, rounded once).

}  // namespace ember::kernels

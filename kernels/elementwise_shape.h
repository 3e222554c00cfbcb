// The plain parameters of the elementwise kernels (binary, unary, where, strided copy), shared by
// the CPU and GPU kernels and by ops/: op codes and the strided iteration space.
#pragma once

#include <cstdint>

namespace ember::kernels {

// fmod: the remainder of truncated division (sign of the dividend, C's fmod and %); remainder:
// of floored division (sign of the divisor, Python's %). Comparisons come last (is_comparison).
enum class BinaryOp : uint8_t {
  add, sub, mul, div, pow, maximum, minimum, fmod, remainder, eq, ne, lt, le, gt, ge
};
// sign gives -1, 0 or 1 (NaN stays NaN); round is to the nearest integer, halves to even.
enum class UnaryOp : uint8_t {
  neg, abs, exp, log, sqrt, rsqrt, clamp, sign, floor, ceil, round, trunc, sin, cos, erf
};

// Comparisons write bool; the other binary ops write the operands' dtype.
inline bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::eq;
}

// clamp's bounds (the other unary ops take none).
struct UnaryParams {
  double lo = 0.0, hi = 0.0;
};

// The most dims a strided operand may have after its dims are merged; ops/ materialises rarer
// layouts first.
constexpr int kMaxDims = 8;

// The iteration space of an elementwise kernel over N operands: the sizes of the row-major
// iteration space and each operand's stride along each dim, in elements (0 along broadcast
// dims). Kernels that write a new tensor write it contiguous, in this row-major order.
template <int N>
struct StridedIndex {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
};

// The kernels (kernels/kernel_table.h):
//   binary_contiguous / binary_strided  out = a (op) b over n elements or over `index`
//   unary_contiguous / unary_strided    out = op(a)
//   where_strided                       out = cond ? a : b (index.strides: cond, a, b)
//   copy_strided                        dst = src converted (index.strides: dst, src; any layout)
//   random_fill                         out = n Philox draws of `dist` (runtime/philox.h)
// requires: dtypes the device implements: the cpu every dtype but float16/bfloat16 (casts
//           excepted), the GPUs float32, float64, int32 and int64 (copies: also uint8, bool;
//           random fills float32/float64); integers have no div, and of the unary ops only neg,
//           abs, clamp, sign, floor, ceil, round and trunc (the last four the identity); integer
//           fmod/remainder need non-zero divisors (ops/ checks; a kernel gives 0 for one); `out`
//           contiguous over the iteration space and not overlapping an
//           input, except that it may be an input exactly (in place); comparisons write bool.
// ensures:  the same values on every device: NaN-propagating maximum/minimum; clamp as
//           min(max(x, lo), hi) with NaN passing through and integer bounds rounded inwards;
//           integer pow with a negative exponent 0 unless the base is 1 or -1; a conversion to
//           bool is x != 0 (as ember::scalar_cast); a random fill gives, for one (seed, offset),
//           bit for bit the same uniform and bernoulli values everywhere, and normals equal up to
//           the device's sinf/cosf/logf rounding; up to the device's rounding of exp/log/pow.

}  // namespace ember::kernels

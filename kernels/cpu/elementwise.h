// CPU kernels for elementwise ops: raw host pointers, byte strides, one element type per call.
//
// The caller (ops/elementwise.cpp) has already promoted every operand to the compute dtype and
// broadcast the shapes; a broadcast operand simply has stride 0 along the repeated dims.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "runtime/dtype.h"

namespace ember::kernels::cpu {

enum class BinaryOp : uint8_t { add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge };
enum class UnaryOp : uint8_t { neg, abs, exp, log, sqrt, rsqrt, clamp };

// Comparisons write bool; every other binary op writes the compute dtype.
inline bool is_comparison(BinaryOp op) { return op >= BinaryOp::eq; }

// The iteration space of an N-operand elementwise op: the output's sizes and, for each operand
// (operand 0 is the output), its stride along each dim in bytes.
template <int N>
struct StridedShape {
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> strides;
};

// out = op(a, b).
// requires: a, b of dtype `t` (f32, f64, i32, i64, u8 or bool); out of dtype t, or bool for
//           comparisons. div: floating t only. sub, pow: not bool. Throws DTypeError otherwise.
// ensures:  for bool, add/maximum are "or" and mul/minimum are "and"; integer pow with a
//           negative exponent gives 0 unless the base is 1 or -1.
void binary_cpu(BinaryOp op, DType t, const StridedShape<3>& shape, void* out, const void* a,
                const void* b);
// The same on n contiguous elements of each operand (no broadcasting).
void binary_contiguous_cpu(BinaryOp op, DType t, int64_t n, void* out, const void* a,
                           const void* b);

// Bounds for clamp (applied as min(max(x, lo), hi), so lo > hi gives hi everywhere).
struct UnaryParams {
  double lo = 0.0, hi = 0.0;
};

// out = op(a), out and a of dtype `t`.
// requires: exp, log, sqrt, rsqrt: floating t; neg, abs, clamp: not bool. DTypeError otherwise.
void unary_cpu(UnaryOp op, DType t, const UnaryParams& params, const StridedShape<2>& shape,
               void* out, const void* a);
void unary_contiguous_cpu(UnaryOp op, DType t, const UnaryParams& params, int64_t n, void* out,
                          const void* a);

// out = cond ? a : b. cond is bool; out, a, b of dtype `t`. Operands in the order out, cond, a, b.
void where_cpu(DType t, const StridedShape<4>& shape, void* out, const bool* cond, const void* a,
               const void* b);

}  // namespace ember::kernels::cpu

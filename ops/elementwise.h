// Elementwise tensor ops with NumPy broadcasting and PyTorch type promotion.
//
// requires: operands on the same device (DeviceError naming both otherwise); shapes that
//           broadcast (ShapeError naming both otherwise); dtypes the op supports (DTypeError).
//           On the cpu: every dtype; on cuda/emu the compute (promoted) dtype must be f32,
//           f64, f16, bf16, i32 or i64. float16 and bfloat16 compute in float32 and round to
//           nearest even once, on store (within 1 ulp of the exact result). Operand
//           dtypes promote with promote_types() whatever their dims (0-D tensors included).
// ensures:  a new contiguous tensor of the broadcast shape, of the promoted dtype (binary
//           arithmetic), bool (comparisons), or the floating dtype (exp/log/sqrt/... of an
//           integer tensor give float32, as in PyTorch). Inputs may be non-contiguous views.
// These ops are autograd-free; autograd/ wraps them into differentiable functions.
#pragma once

#include "runtime/tensor.h"

namespace ember::ops {

// Shape two shapes broadcast to; throws ShapeError naming `op` and both shapes if they do not.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Binary arithmetic. div of two integer tensors is true division (float32 result), as in PyTorch.
// Two bool tensors: add/maximum are "or", mul/minimum "and"; sub and pow raise DTypeError.
// Integer pow with a negative exponent gives 0 unless the base is 1 or -1.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// The remainder of truncated division (the dividend's sign, C's fmod) and of floored division
// (the divisor's sign, Python's %). Integer divisors must not be 0 (ValueError; on a GPU the
// check waits for the device once).
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
// Scalar right-hand sides. The scalar takes the tensor's dtype category, as in PyTorch: a
// floating tensor keeps its dtype; an integer tensor keeps its dtype for an integral scalar
// (bool becomes int64) and becomes float32 for a fractional one.
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor pow(const Tensor& a, double exponent);

// Unary.
Tensor neg(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor rsqrt(const Tensor& a);
// sign (-1, 0, 1; NaN stays NaN), floor, ceil, round (halves to even) and trunc keep integer
// dtypes (the last four are then the identity); sin, cos and erf give float32 for integers.
Tensor sign(const Tensor& a);
Tensor floor(const Tensor& a);
Tensor ceil(const Tensor& a);
Tensor round(const Tensor& a);
Tensor trunc(const Tensor& a);
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor erf(const Tensor& a);
// Clamp into [lo, hi] as min(max(a, lo), hi); either bound may be omitted with +-infinity;
// NaN bounds raise ValueError. Integer tensors keep their dtype (bounds round inwards).
Tensor clamp(const Tensor& a, double lo, double hi);

// In place, for a caller that owns `a` (a graph's intermediate): a = clamp(a, lo, hi) and
// a = a + b (b broadcast to a's shape); returns a.
// requires: a contiguous, its dtype the result's (ValueError, DTypeError otherwise); for add_,
//           the broadcast shape a's own (ShapeError otherwise).
Tensor clamp_(const Tensor& a, double lo, double hi);
Tensor add_(const Tensor& a, const Tensor& b);

// Comparisons (result bool).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// cond ? a : b, elementwise; cond must be bool; a, b promoted; all three broadcast.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

}  // namespace ember::ops

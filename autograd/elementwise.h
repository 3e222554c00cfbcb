// Differentiable elementwise arithmetic and the operators + - * / on tensors, and the comparisons
// (not differentiable). Broadcasting, type promotion and the supported dtypes are those of
// ops/elementwise.h; gradients are summed back to each input's shape, in each input's dtype.
#pragma once

#include "runtime/tensor.h"

namespace ember {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor pow(const Tensor& a, double exponent);
Tensor clamp(const Tensor& a, double lo, double hi);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// a ** b elementwise. The gradient for b is out * log(a), so it is finite only where a > 0.
Tensor pow(const Tensor& a, const Tensor& b);
// cond ? a : b elementwise, all three broadcast. requires: cond is bool (DTypeError). The gradient
// goes to a where cond holds and to b elsewhere; cond gets none.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// --- Not differentiable: comparisons, with bool results -----------------------------------------
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// Operators, with the same semantics as the functions above.
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(const Tensor& a, double b);

}  // namespace ember

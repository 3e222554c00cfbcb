// The differentiable tensor API: what users call. Each function runs the autograd-free op from
// ops/ and, when grad mode is on and an input requires grad, records how to differentiate it.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember {

// --- Leaves and gradients ---------------------------------------------------------------------
// Marks a leaf as requiring grad. requires: a floating dtype; t is a leaf (no grad_fn).
Tensor& requires_grad_(Tensor& t, bool requires = true);
// The accumulated gradient of a leaf (undefined until a backward reaches it).
Tensor grad(const Tensor& t);
// Clears a leaf's gradient.
void zero_grad(Tensor& t);
bool is_leaf(const Tensor& t);
// A tensor sharing t's storage (and version counter) with no autograd history.
Tensor detach(const Tensor& t);

// --- Elementwise --------------------------------------------------------------------------------
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

// --- Reductions -----------------------------------------------------------------------------------
Tensor sum(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);

// --- Products and shapes ------------------------------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1);
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);

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

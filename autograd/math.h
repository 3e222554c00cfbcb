// More differentiable maths, with PyTorch's names and semantics: rounding and sign (zero
// gradient, as PyTorch defines it), sin/cos/erf, fmod/remainder, lerp, the NaN/inf tests,
// logsumexp, vector norms, any/all, outer, addmm/baddbmm and einsum. Dtypes and broadcasting are
// those of ops/elementwise.h; gradients are summed back to each input's shape.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

Tensor sign(const Tensor& a);
Tensor floor(const Tensor& a);
Tensor ceil(const Tensor& a);
// To the nearest integer, halves to even; with decimals, to that many decimal places
// (a * 10^d rounded, / 10^d, as PyTorch).
Tensor round(const Tensor& a, int64_t decimals = 0);
Tensor trunc(const Tensor& a);
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor erf(const Tensor& a);
// Remainders of truncated (fmod) and floored (remainder, Python's %) division; the gradient for
// b is -trunc(a / b) (fmod) or -floor(a / b) (remainder) times the output gradient.
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
// a + weight * (b - a).
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& weight);
Tensor lerp(const Tensor& a, const Tensor& b, double weight);

// Not differentiable: bool results.
Tensor isnan(const Tensor& a);
Tensor isinf(const Tensor& a);
Tensor isfinite(const Tensor& a);
Tensor logical_not(const Tensor& a);
// Whether any / all elements are non-zero, over dims (all dims when empty).
Tensor any(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor all(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);

// log(sum(exp(a))) over dims, computed around the maximum so that it neither overflows nor
// underflows; -inf for an all -inf slice, as PyTorch. requires a floating a.
Tensor logsumexp(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim = false);
// The ord-norm over dims (all when empty): ord 2 (default), 1, inf (max |a|), -inf (min |a|),
// 0 (the count of non-zeros) or any other p: (sum |a|^p)^(1/p). As torch.linalg.vector_norm.
Tensor vector_norm(const Tensor& a, double ord = 2.0, const std::vector<int64_t>& dims = {},
                   bool keepdim = false);

// a (m) times b (n) as an m x n matrix.
Tensor outer(const Tensor& a, const Tensor& b);
// beta * input + alpha * (m1 @ m2): 2-D m1, m2 (addmm) or batched 3-D (baddbmm); input
// broadcasts to the product's shape. beta 0 ignores input's values (NaN included), as PyTorch.
Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, double beta = 1.0,
             double alpha = 1.0);
Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, double beta = 1.0,
               double alpha = 1.0);

// Einstein summation, as torch.einsum: "ij,jk->ik", implicit output ("ij,jk" sums the repeated
// letters and orders the rest alphabetically), "..." for broadcast dims, a letter repeated within
// one operand takes its diagonal. Each pair of operands contracts through one batched matrix
// product (dims permuted and merged), left to right. ValueError naming the equation and the
// operand for a malformed equation or sizes that disagree.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

}  // namespace ember

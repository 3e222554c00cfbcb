// Differentiable reductions over chosen dims, with keepdim, as in PyTorch (an empty `dims` means
// all dims; requirements in ops/reduce.h), and the arg-reductions, which are not differentiable.
#pragma once

#include <optional>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// The largest (smallest) elements; the gradient is shared evenly among tied extremes.
Tensor amax(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Variance and standard deviation with Bessel's correction `correction` (1 = unbiased, PyTorch's
// default): sum((a - mean)^2) / (n - correction).
Tensor var(const Tensor& a, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& a, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
           bool keepdim = false);

// --- Not differentiable: int64 indices --------------------------------------------------------
// The index of the first extreme along `dim`, or in the flattened tensor without one.
Tensor argmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

}  // namespace ember

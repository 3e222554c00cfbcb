// Differentiable reductions over chosen dims, with keepdim, as in PyTorch (an empty `dims` means
// all dims; requirements in ops/reduce.h).
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember {

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);

}  // namespace ember

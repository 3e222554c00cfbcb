// Sorting and cumulative ops, differentiable where PyTorch's are: the values of sort, topk and
// kthvalue (their gradient goes back to the positions they came from), cumsum and cumprod.
// argsort and unique give indices or data-dependent sets and are not differentiable.
// Semantics, requirements and errors are those of ops/sort.h and ops/scan.h.
#pragma once

#include <optional>

#include "ops/sort.h"
#include "runtime/tensor.h"

namespace ember {

using ops::SortResult;
using ops::UniqueResult;

SortResult sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
SortResult topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                bool sorted = true);
SortResult kthvalue(const Tensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);
UniqueResult unique(const Tensor& x, bool return_inverse = false, bool return_counts = false,
                    std::optional<int64_t> dim = std::nullopt);

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

}  // namespace ember

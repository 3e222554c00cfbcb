// Sorting and what is built on it, as in PyTorch: sort, argsort, topk, kthvalue and unique
// (randperm: ops/creation.h). Every sort is stable (equal values keep their order) and puts NaN
// above every number; the same result on cpu, cuda and emu (kernels/sort_shape.h).
//
// requires: dim in range (IndexError naming the op); on cuda/emu a dtype the GPU sort implements
//           (float32, float64, float16, bfloat16, int32, int64; DTypeError naming the op).
// ensures:  new contiguous tensors; indices are int64 positions along `dim`.
#pragma once

#include <optional>

#include "runtime/tensor.h"

namespace ember::ops {

struct SortResult {
  Tensor values, indices;
};

SortResult sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
// The k largest (or smallest) along dim, in sorted order (largest first when largest). `sorted`
// is accepted for PyTorch's signature; the result is always sorted. requires 0 <= k <= size.
SortResult topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                bool sorted = true);
// The k-th smallest (1-based) along dim, and its position (the first such, by stability).
SortResult kthvalue(const Tensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);

struct UniqueResult {
  Tensor values, inverse, counts;  // inverse/counts undefined unless asked for
};
// The distinct values of x in ascending order (flattened, or of the slices along `dim`), with,
// when asked, where each element of x went (inverse, x's shape; or size(dim)) and how often each
// value occurs. Waits for the device once (Note [Sizes from data] in ops/index.cpp).
UniqueResult unique(const Tensor& x, bool return_inverse = false, bool return_counts = false,
                    std::optional<int64_t> dim = std::nullopt);

}  // namespace ember::ops

// Cumulative sums and products along a dim, as torch.cumsum/cumprod.
//
// requires: dim in range (IndexError naming the op otherwise); on cuda/emu a compute dtype the
//           GPU kernels implement (ops::check_compute_dtype).
// ensures:  a new contiguous tensor of x's shape: of x's dtype for floating x, int64 for integer
//           and bool x (or of `dtype` when given: x is converted first, as PyTorch's dtype
//           argument does). Floating sums and products accumulate in double (kernels/sort_shape.h).
#pragma once

#include <optional>

#include "runtime/tensor.h"

namespace ember::ops {

// reverse: sums from the end of the dim (out[i] = x[i] + ... + x[n-1], cumsum's gradient).
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt,
              bool reverse = false);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
// The gradient of y = cumprod(x, dim) given dy: exact where x has zeros (no division).
// requires: x and dy floating, of one shape, dtype and device.
Tensor cumprod_backward(const Tensor& x, const Tensor& dy, int64_t dim);

}  // namespace ember::ops

// Differentiable copies and conversions: to another device or dtype, contiguous, clone. The
// gradient of each comes back on the input's device, in the input's dtype.
#pragma once

#include "runtime/tensor.h"

namespace ember {

// x on `device` as `dtype`: x itself when both already match, otherwise a new tensor.
// requires: a floating dtype when x requires grad (DTypeError: gradients need one).
Tensor to(const Tensor& x, Device device, DType dtype);
Tensor to(const Tensor& x, Device device);
Tensor to(const Tensor& x, DType dtype);
// x itself when already contiguous, otherwise a contiguous copy.
Tensor contiguous(const Tensor& x);
// Always a new contiguous tensor.
Tensor clone(const Tensor& x);

}  // namespace ember

// Differentiable shape changes: the Tensor views of runtime/tensor.h (same requirements, same
// errors), recorded so that the gradient flows back through them, plus cat and stack.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember {

// A view when the strides allow, otherwise a copy; one size may be -1.
Tensor reshape(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, int64_t d0, int64_t d1);
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);
// Always a view; ShapeError when the strides cannot express `shape` (then use reshape).
Tensor view(const Tensor& a, const Shape& shape);
// Dims start_dim..end_dim merged into one (a view when the strides allow, otherwise a copy).
Tensor flatten(const Tensor& a, int64_t start_dim = 0, int64_t end_dim = -1);
// Without every size-1 dim, or without dim `d` if its size is 1.
Tensor squeeze(const Tensor& a);
Tensor squeeze(const Tensor& a, int64_t d);
// With a new size-1 dim at `d` (in [-dim-1, dim]).
Tensor unsqueeze(const Tensor& a, int64_t d);
// Broadcast to `shape` (new leading dims allowed, size-1 dims repeat, -1 keeps a size). The
// gradient is summed back over the repeated dims.
Tensor expand(const Tensor& a, const Shape& shape);
// Elements start, start+step, ... < end of dim `d`; start and end count from the end when
// negative and clamp to the dim, as Python slices do. requires: step > 0 (ValueError).
Tensor slice(const Tensor& a, int64_t d, int64_t start, int64_t end, int64_t step = 1);
// Element `index` of dim `d` (negative counts from the end), the dim removed.
Tensor select(const Tensor& a, int64_t d, int64_t index);

// Concatenation along `dim`.
// requires: a non-empty list (ValueError); the same number of dims and the same sizes outside
//           `dim` (ShapeError); one device (DeviceError).
// ensures:  a new contiguous tensor of the promoted dtype; each input's gradient is its slice of
//           the output gradient, in the input's dtype.
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);
// The tensors, of one shape (ShapeError otherwise), joined along a new dim `dim`.
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);

// torch.nn.functional.pixel_shuffle: [*, C r^2, H, W] -> [*, C, H r, W r], element
// (c, h r + i, w r + j) taken from channel c r^2 + i r + j; pixel_unshuffle is its inverse
// ([*, C, H r, W r] -> [*, C r^2, H, W]). requires: x of 3 or more dims, r >= 1 (ValueError),
// channels divisible by r^2, or H and W by r (ShapeError naming them).
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);

}  // namespace ember

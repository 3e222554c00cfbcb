// Differentiable shape changes: the Tensor views of runtime/tensor.h (same requirements, same
// errors), recorded so that the gradient flows back through them, plus cat and stack.
#pragma once

#include <optional>
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

// Elements start .. start+length-1 of dim d (a view). requires: 0 <= start (after counting a
// negative start from the end) and start + length <= size (IndexError naming both).
Tensor narrow(const Tensor& a, int64_t d, int64_t start, int64_t length);
// Views of consecutive pieces along dim: of `size` elements each (the last may be smaller), or of
// the given sizes (which must add up to the dim's size: ValueError).
std::vector<Tensor> split(const Tensor& a, int64_t size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& sizes, int64_t dim = 0);
// `chunks` pieces as torch.chunk makes them (each ceil(size / chunks), fewer when that divides
// unevenly); views.
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);
// Each element of dim as a tensor without that dim (views).
std::vector<Tensor> unbind(const Tensor& a, int64_t dim = 0);
// Dims moved from `source` to `destination` positions, the others keeping their order (a view).
Tensor movedim(const Tensor& a, const std::vector<int64_t>& source,
               const std::vector<int64_t>& destination);
// Copies: reversed along dims; shifted cyclically (ops/flip.h).
Tensor flip(const Tensor& a, const std::vector<int64_t>& dims);
Tensor roll(const Tensor& a, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims);
// The tensor repeated sizes[i] times along dim i (leading sizes add dims), as torch.repeat;
// tile pads reps with leading 1s when it has fewer entries than a has dims.
Tensor repeat(const Tensor& a, const std::vector<int64_t>& sizes);
Tensor tile(const Tensor& a, const std::vector<int64_t>& reps);
// Each element repeated `repeats` times along dim (or along the flattened tensor without one); or
// element i repeats[i] times (repeats 1-D int64 of the dim's size, or of one element), which waits
// for the device once to size the result (Note [Sizes from data] in ops/index.cpp).
Tensor repeat_interleave(const Tensor& a, int64_t repeats, std::optional<int64_t> dim = {});
Tensor repeat_interleave(const Tensor& a, const Tensor& repeats, std::optional<int64_t> dim = {});
// torch.repeat_interleave(repeats): 0, 1, ... each repeated repeats[i] times (int64).
Tensor repeat_interleave(const Tensor& repeats);
// The lower (tril) or upper (triu) triangle of the last two dims, the rest zero; diagonal 0 is
// the main diagonal, positive above it, negative below. requires a.dim() >= 2.
Tensor tril(const Tensor& a, int64_t diagonal = 0);
Tensor triu(const Tensor& a, int64_t diagonal = 0);

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

// F.interpolate's kernels as an op, autograd-free: nearest and linear (1-D) / bilinear (2-D)
// resampling of [N, C, W] or [N, C, H, W] to a given size with PyTorch's source-index rules
// (kernels/interpolate_shape.h). The backward gathers each input element's gradient from the
// outputs that read it (no atomics, deterministic). Choosing the size from scale_factor, and the
// argument checks of torch.nn.functional.interpolate, are autograd/interpolate.h's.
//
// requires: x floating, 3-D (one spatial dim) or 4-D (two) (ShapeError); size with one entry per
//           spatial dim, each >= 1, as are x's spatial sizes (ValueError); scales empty or one per
//           spatial dim (each the user's scale factor, or 0 for none).
// ensures:  a new contiguous [N, C, size...] tensor of x's dtype.
#pragma once

#include <vector>

#include "kernels/interpolate_shape.h"
#include "runtime/tensor.h"

namespace ember::ops {

using kernels::InterpMode;

struct InterpolateParams {
  std::vector<int64_t> size;  // the output's spatial sizes
  InterpMode mode = InterpMode::nearest;
  bool align_corners = false;  // linear modes only
  std::vector<double> scales;  // the scale factors the source indices use (0 or empty: in / out)
};

Tensor interpolate(const Tensor& x, const InterpolateParams& p);
// dL/dx for y = interpolate(x, p), from dL/dy of y's shape.
Tensor interpolate_backward(const Tensor& grad_out, const Shape& x_shape,
                            const InterpolateParams& p);

}  // namespace ember::ops

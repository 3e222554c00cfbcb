// Differentiable torch.nn.functional.interpolate, modes "nearest", "linear" (3-D input [N, C, W])
// and "bilinear" (4-D input [N, C, H, W]), with PyTorch's arguments and rules:
//   exactly one of size and scale_factor (ValueError otherwise); each a single value (every
//   spatial dim) or one per spatial dim; the output size floor(in * scale_factor); the source
//   indices use 1 / scale_factor unless recompute_scale_factor is true (then in / out);
//   align_corners only with the linear modes (ValueError otherwise), False when not given.
// Other modes ("bicubic", "trilinear", "area", "nearest-exact") are a ValueError naming the
// supported ones; a mode that does not fit the input's rank is a ShapeError. Kernels and
// requirements: ops/interpolate.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ops/interpolate.h"
#include "runtime/tensor.h"

namespace ember {

Tensor interpolate(const Tensor& x, const std::vector<int64_t>& size,
                   const std::vector<double>& scale_factor = {},
                   const std::string& mode = "nearest",
                   std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt);

// The parameters interpolate runs with (the checks above), for modules that keep them.
ops::InterpolateParams interpolate_params(const Shape& x_shape, const std::vector<int64_t>& size,
                                          const std::vector<double>& scale_factor,
                                          const std::string& mode,
                                          std::optional<bool> align_corners,
                                          std::optional<bool> recompute_scale_factor);

}  // namespace ember

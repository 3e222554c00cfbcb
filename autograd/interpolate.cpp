#include "autograd/interpolate.h"

#include <cmath>

#include "autograd/function.h"

namespace ember {

ops::InterpolateParams interpolate_params(const Shape& xs, const std::vector<int64_t>& size,
                                          const std::vector<double>& scale_factor,
                                          const std::string& mode,
                                          std::optional<bool> align_corners,
                                          std::optional<bool> recompute_scale_factor) {
  const char* op = "interpolate";
  ops::InterpolateParams p;
  const bool linear = mode == "linear" || mode == "bilinear";
  EMBER_CHECK_VALUE(mode == "nearest" || linear, op, ": mode '", mode,
                    "' is not supported; expected 'nearest', 'linear' (3-D input) or 'bilinear' "
                    "(4-D input)");
  const int64_t spatial = static_cast<int64_t>(xs.size()) - 2;
  EMBER_CHECK_SHAPE(spatial >= 1, op,
                    ": expected an input [N, C, ...] with spatial dims, got "
                    "shape ",
                    xs);
  EMBER_CHECK_SHAPE(mode != "linear" || spatial == 1, op,
                    ": mode 'linear' needs a 3-D input [N, C, W], got shape ", xs);
  EMBER_CHECK_SHAPE(mode != "bilinear" || spatial == 2, op,
                    ": mode 'bilinear' needs a 4-D input [N, C, H, W], got shape ", xs);
  EMBER_CHECK_SHAPE(spatial <= 2, op, ": mode 'nearest' supports 3-D and 4-D inputs, got shape ",
                    xs);
  EMBER_CHECK_VALUE(linear || !align_corners.has_value(), op,
                    ": align_corners can only be set with the interpolating modes 'linear' and "
                    "'bilinear', got mode '",
                    mode, "'");
  EMBER_CHECK_VALUE(size.empty() != scale_factor.empty(), op,
                    size.empty() ? ": either size or scale_factor should be defined"
                                 : ": only one of size or scale_factor should be defined");
  auto per_dim = [&](auto v, const char* what) {
    EMBER_CHECK_VALUE(v.size() == 1 || static_cast<int64_t>(v.size()) == spatial, op, ": ", what,
                      " must have one value or one per spatial dim (", spatial, "), got ",
                      v.size());
    if (v.size() == 1) v.assign(static_cast<size_t>(spatial), v[0]);
    return v;
  };
  p.mode = linear ? ops::InterpMode::linear : ops::InterpMode::nearest;
  p.align_corners = align_corners.value_or(false);
  if (!size.empty()) {
    p.size = per_dim(size, "size");
    return p;
  }
  const std::vector<double> scales = per_dim(scale_factor, "scale_factor");
  for (int64_t d = 0; d < spatial; ++d) {
    EMBER_CHECK_VALUE(std::isfinite(scales[d]) && scales[d] > 0, op,
                      ": scale_factor must be positive and finite, got ", scales[d]);
    p.size.push_back(static_cast<int64_t>(std::floor(static_cast<double>(xs[2 + d]) * scales[d])));
  }
  if (!recompute_scale_factor.value_or(false)) p.scales = scales;
  return p;
}

Tensor interpolate(const Tensor& x, const std::vector<int64_t>& size,
                   const std::vector<double>& scale_factor, const std::string& mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor) {
  const ops::InterpolateParams p = interpolate_params(x.shape(), size, scale_factor, mode,
                                                      align_corners, recompute_scale_factor);
  const Shape xs = x.shape();
  return record("InterpolateBackward", ops::interpolate(x, p), {x}, {},
                [xs, p](const Tensor& g, const std::vector<Tensor>&) {
                  return std::vector<Tensor>{ops::interpolate_backward(g, xs, p)};
                });
}

}  // namespace ember

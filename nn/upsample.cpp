#include "nn/upsample.h"

#include <algorithm>
#include <sstream>

#include "autograd/interpolate.h"
#include "autograd/shape.h"

namespace ember::nn {

Upsample::Upsample(std::vector<int64_t> size_, std::vector<double> scale, std::string mode_,
                   std::optional<bool> align, std::optional<bool> recompute)
    : size(std::move(size_)),
      scale_factor(std::move(scale)),
      mode(std::move(mode_)),
      align_corners(align),
      recompute_scale_factor(recompute) {
  // The rules that do not need the input, checked now on a stand-in of the mode's rank.
  const size_t given = std::max(size.size(), scale_factor.size());
  const size_t spatial = mode == "bilinear" ? 2 : mode == "linear" ? 1 : (given == 2 ? 2 : 1);
  interpolate_params(Shape(std::vector<int64_t>(2 + spatial, 1)), size, scale_factor, mode,
                     align_corners, recompute_scale_factor);
}

Tensor Upsample::forward(const Tensor& x) {
  return interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor);
}

std::string Upsample::extra_repr() const {
  std::ostringstream os;
  if (!scale_factor.empty()) {
    os << "scale_factor=";
    if (scale_factor.size() == 1) {
      os << scale_factor[0];
    } else {
      os << "(";
      for (size_t i = 0; i < scale_factor.size(); ++i) os << (i ? ", " : "") << scale_factor[i];
      os << ")";
    }
  } else {
    os << "size=";
    if (size.size() == 1) {
      os << size[0];
    } else {
      os << "(";
      for (size_t i = 0; i < size.size(); ++i) os << (i ? ", " : "") << size[i];
      os << ")";
    }
  }
  os << ", mode='" << mode << "'";
  return os.str();
}

PixelShuffle::PixelShuffle(int64_t r) : upscale_factor(r) {
  EMBER_CHECK_VALUE(r >= 1, "PixelShuffle: upscale_factor must be positive, got ", r);
}
Tensor PixelShuffle::forward(const Tensor& x) {
  return pixel_shuffle(x, upscale_factor);
}
std::string PixelShuffle::extra_repr() const {
  return "upscale_factor=" + std::to_string(upscale_factor);
}

PixelUnshuffle::PixelUnshuffle(int64_t r) : downscale_factor(r) {
  EMBER_CHECK_VALUE(r >= 1, "PixelUnshuffle: downscale_factor must be positive, got ", r);
}
Tensor PixelUnshuffle::forward(const Tensor& x) {
  return pixel_unshuffle(x, downscale_factor);
}
std::string PixelUnshuffle::extra_repr() const {
  return "downscale_factor=" + std::to_string(downscale_factor);
}

}  // namespace ember::nn

// Resampling layers: Upsample (F.interpolate with a fixed size or scale factor), PixelShuffle and
// PixelUnshuffle.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"

namespace ember::nn {

// Exactly one of size and scale_factor (each one value for every spatial dim, or one per dim);
// mode "nearest", "linear" or "bilinear"; align_corners for the linear modes only. The
// arguments are checked at construction (autograd/interpolate.h's rules, ValueError).
class Upsample : public Module {
 public:
  Upsample(std::vector<int64_t> size, std::vector<double> scale_factor,
           std::string mode = "nearest", std::optional<bool> align_corners = std::nullopt,
           std::optional<bool> recompute_scale_factor = std::nullopt);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Upsample"; }
  std::string extra_repr() const override;

  std::vector<int64_t> size;
  std::vector<double> scale_factor;
  std::string mode;
  std::optional<bool> align_corners, recompute_scale_factor;
};

class PixelShuffle : public Module {
 public:
  explicit PixelShuffle(int64_t upscale_factor);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "PixelShuffle"; }
  std::string extra_repr() const override;
  int64_t upscale_factor;
};

class PixelUnshuffle : public Module {
 public:
  explicit PixelUnshuffle(int64_t downscale_factor);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "PixelUnshuffle"; }
  std::string extra_repr() const override;
  int64_t downscale_factor;
};

}  // namespace ember::nn

// Normalisation layers beside BatchNorm2d (nn/layers.h): BatchNorm1d, LayerNorm, GroupNorm and
// InstanceNorm2d, with PyTorch's arguments, defaults, parameter and buffer names.
#pragma once

#include <vector>

#include "nn/module.h"

namespace ember::nn {

// Batch norm over [N, C] or [N, C, L] (the batch norm kernels of every device): batch statistics
// in training (running statistics updated with `momentum`, unbiased variance), running ones in
// eval. Buffers running_mean, running_var, num_batches_tracked. ShapeError for other inputs.
class BatchNorm1d : public Module {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                       bool affine = true, bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "BatchNorm1d"; }
  std::string extra_repr() const override;

  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  int64_t num_features;
  double eps, momentum;
};

// Normalises over the trailing dims normalized_shape; weight (ones) and bias (zeros) of that
// shape when elementwise_affine.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "LayerNorm"; }
  std::string extra_repr() const override;

  Tensor weight, bias;
  std::vector<int64_t> normalized_shape;
  double eps;
  bool elementwise_affine;
};

// Normalises each of num_groups groups of channels of [N, C, *]; weight and bias [C] when
// affine. ValueError when num_groups does not divide num_channels.
class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "GroupNorm"; }
  std::string extra_repr() const override;

  Tensor weight, bias;
  int64_t num_groups, num_channels;
  double eps;
  bool affine;
};

// Normalises each (sample, channel) plane of [N, C, H, W] (or unbatched [C, H, W]). PyTorch's
// defaults: affine false, track_running_stats false; with tracking, eval uses the running
// statistics (buffers running_mean, running_var, num_batches_tracked).
class InstanceNorm2d : public Module {
 public:
  explicit InstanceNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                          bool affine = false, bool track_running_stats = false);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "InstanceNorm2d"; }
  std::string extra_repr() const override;

  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  int64_t num_features;
  double eps, momentum;
  bool affine, track_running_stats;
};

}  // namespace ember::nn

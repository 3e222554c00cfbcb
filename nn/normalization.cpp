#include "nn/normalization.h"

#include <sstream>

#include "autograd/batch_norm.h"
#include "autograd/elementwise.h"
#include "autograd/grad_mode.h"
#include "autograd/layer_norm.h"
#include "autograd/shape.h"

namespace ember::nn {
namespace {

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

const char* flag(bool b) {
  return b ? "True" : "False";
}

}  // namespace

BatchNorm1d::BatchNorm1d(int64_t c, double eps_, double momentum_, bool affine, bool track)
    : num_features(c), eps(eps_), momentum(momentum_) {
  EMBER_CHECK_VALUE(c > 0, "BatchNorm1d: num_features must be positive, got ", c);
  if (affine) {
    weight = register_parameter("weight", ones({c}));
    bias = register_parameter("bias", zeros({c}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", zeros({c}));
    running_var = register_buffer("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

Tensor BatchNorm1d::forward(const Tensor& x) {
  EMBER_CHECK_SHAPE((x.dim() == 2 || x.dim() == 3) && x.size(1) == num_features, "BatchNorm1d(",
                    num_features, "): expected input of shape [N, ", num_features, "] or [N, ",
                    num_features, ", L], got ", x.shape());
  const bool use_batch = is_training() || !running_mean.defined();
  if (is_training() && num_batches_tracked.defined()) {
    NoGradGuard g;
    num_batches_tracked.copy_(ember::add(num_batches_tracked, 1.0));
  }
  return batch_norm(x, weight, bias, running_mean, running_var, use_batch, momentum, eps);
}

std::string BatchNorm1d::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + num(eps) + ", momentum=" + num(momentum) +
         ", affine=" + flag(weight.defined()) +
         ", track_running_stats=" + flag(running_mean.defined());
}

LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps_, bool affine)
    : normalized_shape(std::move(shape)), eps(eps_), elementwise_affine(affine) {
  EMBER_CHECK_VALUE(!normalized_shape.empty(), "LayerNorm: normalized_shape must not be empty");
  for (int64_t d : normalized_shape)
    EMBER_CHECK_VALUE(d >= 0, "LayerNorm: normalized_shape must not be negative, got ",
                      Shape(normalized_shape));
  if (affine) {
    weight = register_parameter("weight", ones(normalized_shape));
    bias = register_parameter("bias", zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  std::string s = "(";
  for (size_t i = 0; i < normalized_shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(normalized_shape[i]);
  s += normalized_shape.size() == 1 ? ",)" : ")";
  return s + ", eps=" + num(eps) + ", elementwise_affine=" + flag(elementwise_affine);
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine_)
    : num_groups(groups), num_channels(channels), eps(eps_), affine(affine_) {
  EMBER_CHECK_VALUE(groups > 0 && channels > 0 && channels % groups == 0,
                    "GroupNorm: num_channels must be divisible by num_groups, got num_channels=",
                    channels, " and num_groups=", groups);
  if (affine) {
    weight = register_parameter("weight", ones({channels}));
    bias = register_parameter("bias", zeros({channels}));
  }
}

Tensor GroupNorm::forward(const Tensor& x) {
  EMBER_CHECK_SHAPE(x.dim() >= 2 && x.size(1) == num_channels, "GroupNorm(", num_groups, ", ",
                    num_channels, "): expected input of shape [N, ", num_channels, ", *], got ",
                    x.shape());
  return group_norm(x, num_groups, weight, bias, eps);
}

std::string GroupNorm::extra_repr() const {
  return std::to_string(num_groups) + ", " + std::to_string(num_channels) + ", eps=" + num(eps) +
         ", affine=" + flag(affine);
}

InstanceNorm2d::InstanceNorm2d(int64_t c, double eps_, double momentum_, bool affine_, bool track)
    : num_features(c), eps(eps_), momentum(momentum_), affine(affine_), track_running_stats(track) {
  EMBER_CHECK_VALUE(c > 0, "InstanceNorm2d: num_features must be positive, got ", c);
  if (affine) {
    weight = register_parameter("weight", ones({c}));
    bias = register_parameter("bias", zeros({c}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", zeros({c}));
    running_var = register_buffer("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

Tensor InstanceNorm2d::forward(const Tensor& x) {
  EMBER_CHECK_SHAPE(x.dim() == 3 || x.dim() == 4, "InstanceNorm2d(", num_features,
                    "): expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got ", x.shape());
  const int64_t c = x.size(x.dim() - 3);
  EMBER_CHECK_SHAPE(c == num_features || !affine, "InstanceNorm2d(", num_features,
                    "): expected input with ", num_features, " channels, got shape ", x.shape());
  const bool batched = x.dim() == 4;
  const Tensor in = batched ? x : unsqueeze(x, 0);
  const Tensor y = instance_norm(in, running_mean, running_var, weight, bias,
                                 is_training() || !track_running_stats, momentum, eps);
  return batched ? y : squeeze(y, 0);
}

std::string InstanceNorm2d::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + num(eps) + ", momentum=" + num(momentum) +
         ", affine=" + flag(affine) + ", track_running_stats=" + flag(track_running_stats);
}

}  // namespace ember::nn

// Normalisation, activation and regularisation layers: BatchNorm2d, ReLU and friends, PReLU,
// Dropout and Dropout2d (the other normalisation layers: nn/normalization.h).
#pragma once

#include <functional>

#include "autograd/activation.h"
#include "autograd/batch_norm.h"
#include "autograd/dropout.h"
#include "nn/module.h"

namespace ember::nn {

class BatchNorm2d;

// Where a BatchNorm2d in training takes its batch statistics from, when not from its own input
// alone: dist/sync_batch_norm.h's statistics over the ranks of a process group (SyncBatchNorm).
// forward() normalises x as the layer would and updates its running statistics.
class BatchNormStatistics {
 public:
  virtual ~BatchNormStatistics() = default;
  virtual Tensor forward(BatchNorm2d& bn, const Tensor& x) = 0;
  virtual std::string name() const = 0;  // the layer's repr name ("SyncBatchNorm")
};

// Batch norm over [N, C, H, W]: batch statistics in training (running statistics updated with
// `momentum`, unbiased variance), running statistics in eval. Buffers: running_mean,
// running_var, num_batches_tracked (PyTorch's names).
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                       bool affine = true, bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return statistics ? statistics->name() : "BatchNorm2d"; }
  std::string extra_repr() const override;

  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  int64_t num_features;
  double eps, momentum;
  // Set by fuse_for_inference (nn/fuse.h): its effect is in the convolution before it, and
  // forward returns its input (in eval mode only).
  bool folded = false;
  // Set: training statistics come from there (SyncBatchNorm); eval is unchanged.
  std::shared_ptr<BatchNormStatistics> statistics;
};

// An activation layer: forward applies `fn`; `name` and `extra` are for repr().
class Activation : public Module {
 public:
  using Fn = std::function<Tensor(const Tensor&)>;
  Activation(std::string name, Fn fn, std::string extra = "")
      : name_(std::move(name)), extra_(std::move(extra)), fn_(std::move(fn)) {}
  Tensor forward(const Tensor& x) override { return folded ? x : fn_(x); }
  std::string name() const override { return name_; }
  std::string extra_repr() const override { return extra_ + (folded ? ", folded" : ""); }

  // Set by fuse_for_inference (nn/fuse.h) on a ReLU whose convolution now applies it
  // (Conv2d::fused_relu): forward returns its input.
  bool folded = false;

 private:
  std::string name_, extra_;
  Fn fn_;
};

std::shared_ptr<Activation> ReLU();
std::shared_ptr<Activation> LeakyReLU(double negative_slope = 0.01);
std::shared_ptr<Activation> Sigmoid();
std::shared_ptr<Activation> Tanh();
std::shared_ptr<Activation> GELU(GeluApproximate approximate = GeluApproximate::None);
std::shared_ptr<Activation> SiLU();
std::shared_ptr<Activation> ELU(double alpha = 1.0);
std::shared_ptr<Activation> Softplus(double beta = 1.0, double threshold = 20.0);
std::shared_ptr<Activation> Hardtanh(double min_val = -1.0, double max_val = 1.0);
std::shared_ptr<Activation> ReLU6();
std::shared_ptr<Activation> Hardswish();
std::shared_ptr<Activation> Hardsigmoid();
std::shared_ptr<Activation> Mish();
// softmax over the channels (dim -3) of [N, C, H, W] or [C, H, W] (ShapeError otherwise).
std::shared_ptr<Activation> Softmax2d();

// x > 0 ? x : weight * x with a learnable weight of num_parameters values (1, or the input's
// channels), each initialised to `init` (PyTorch's 0.25).
class PReLU : public Module {
 public:
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
  Tensor forward(const Tensor& x) override { return prelu(x, weight); }
  std::string name() const override { return "PReLU"; }
  std::string extra_repr() const override;

  Tensor weight;
  int64_t num_parameters;
};

// Zeroes elements with probability p in training (scaling the rest by 1/(1-p)); identity in
// eval. Draws from `gen` (the default generator when null), so runs are reproducible.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override { return dropout(x, p_, is_training(), gen_); }
  std::string name() const override { return "Dropout"; }
  std::string extra_repr() const override;

 private:
  double p_;
  Generator* gen_;
};

// Zeroes whole channels of [N, C, H, W] (or [N, C, L]) with probability p in training, scaling
// the rest by 1/(1-p) (feature_dropout); identity in eval.
class Dropout2d : public Module {
 public:
  explicit Dropout2d(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override { return feature_dropout(x, p_, is_training(), gen_); }
  std::string name() const override { return "Dropout2d"; }
  std::string extra_repr() const override;

 private:
  double p_;
  Generator* gen_;
};

}  // namespace ember::nn

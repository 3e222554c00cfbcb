// Fully connected and shape layers: Linear, Flatten.
#pragma once

#include "nn/module.h"

namespace ember::nn {

// y = x W^T + b, for x of shape [..., in_features]. Initialised as PyTorch does:
// W ~ kaiming_uniform(a = sqrt(5)), b ~ U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Linear"; }
  std::string extra_repr() const override;

  Tensor weight, bias;  // bias undefined when built without one
  int64_t in_features, out_features;
};

// Flattens dims start_dim..end_dim into one (defaults: keep the batch dim).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Flatten"; }
  std::string extra_repr() const override;

 private:
  int64_t start_dim_, end_dim_;
};

}  // namespace ember::nn

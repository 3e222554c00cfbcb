// Loss modules (PyTorch's nn.L1Loss, nn.CrossEntropyLoss, ...): each holds its options and calls
// the differentiable function of autograd/loss.h. Class weights and pos_weight are buffers
// ("weight", "pos_weight"), so they move with to() and appear in state_dict(), as PyTorch's.
#pragma once

#include <string>

#include "autograd/loss.h"
#include "nn/module.h"

namespace ember::nn {

// forward(input, target); forward(x) alone is a ValueError.
class Loss : public Module {
 public:
  explicit Loss(Reduction reduction) : reduction(reduction) {}
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  using Module::forward;
  std::string extra_repr() const override;

  Reduction reduction;
};

#define EMBER_SIMPLE_LOSS(Name)                                         \
  class Name : public Loss {                                            \
   public:                                                              \
    explicit Name(Reduction r = Reduction::Mean) : Loss(r) {}           \
    Tensor forward(const Tensor& input, const Tensor& target) override; \
    std::string name() const override { return #Name; }                 \
  };
EMBER_SIMPLE_LOSS(L1Loss)
EMBER_SIMPLE_LOSS(MSELoss)
#undef EMBER_SIMPLE_LOSS

class SmoothL1Loss : public Loss {
 public:
  explicit SmoothL1Loss(Reduction r = Reduction::Mean, double beta = 1.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "SmoothL1Loss"; }
  double beta;
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(Reduction r = Reduction::Mean, double delta = 1.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "HuberLoss"; }
  double delta;
};

// reduction "none", "mean", "batchmean" or "sum" (kl_div's).
class KLDivLoss : public Module {
 public:
  explicit KLDivLoss(std::string reduction = "mean", bool log_target = false);
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  using Module::forward;
  std::string name() const override { return "KLDivLoss"; }
  std::string reduction;
  bool log_target;
};

class BCELoss : public Loss {
 public:
  explicit BCELoss(const Tensor& weight = Tensor(), Reduction r = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "BCELoss"; }
  Tensor weight;
};

class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(const Tensor& weight = Tensor(), Reduction r = Reduction::Mean,
                             const Tensor& pos_weight = Tensor());
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "BCEWithLogitsLoss"; }
  Tensor weight, pos_weight;
};

class NLLLoss : public Loss {
 public:
  explicit NLLLoss(const Tensor& weight = Tensor(), int64_t ignore_index = -100,
                   Reduction r = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "NLLLoss"; }
  Tensor weight;
  int64_t ignore_index;
};

// Class indices or class probabilities as the target (cross_entropy's two forms).
class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(const Tensor& weight = Tensor(), int64_t ignore_index = -100,
                            Reduction r = Reduction::Mean, double label_smoothing = 0.0);
  Tensor forward(const Tensor& input, const Tensor& target) override;
  std::string name() const override { return "CrossEntropyLoss"; }
  Tensor weight;
  int64_t ignore_index;
  double label_smoothing;
};

// forward(x1, x2, target).
class CosineEmbeddingLoss : public Module {
 public:
  explicit CosineEmbeddingLoss(double margin = 0.0, Reduction r = Reduction::Mean)
      : margin(margin), reduction(r) {}
  Tensor forward(const Tensor& x1, const Tensor& x2, const Tensor& target);
  using Module::forward;
  std::string name() const override { return "CosineEmbeddingLoss"; }
  double margin;
  Reduction reduction;
};

class MarginRankingLoss : public Module {
 public:
  explicit MarginRankingLoss(double margin = 0.0, Reduction r = Reduction::Mean)
      : margin(margin), reduction(r) {}
  Tensor forward(const Tensor& x1, const Tensor& x2, const Tensor& target);
  using Module::forward;
  std::string name() const override { return "MarginRankingLoss"; }
  double margin;
  Reduction reduction;
};

}  // namespace ember::nn

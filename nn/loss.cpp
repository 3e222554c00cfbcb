#include "nn/loss.h"

namespace ember::nn {

std::string Loss::extra_repr() const {
  return reduction == Reduction::Mean  ? ""
         : reduction == Reduction::Sum ? "reduction='sum'"
                                       : "reduction='none'";
}

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  return l1_loss(input, target, reduction);
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return mse_loss(input, target, reduction);
}

SmoothL1Loss::SmoothL1Loss(Reduction r, double beta_) : Loss(r), beta(beta_) {
  EMBER_CHECK_VALUE(beta >= 0, "SmoothL1Loss: beta must be non-negative, got ", beta);
}
Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return smooth_l1_loss(input, target, reduction, beta);
}

HuberLoss::HuberLoss(Reduction r, double delta_) : Loss(r), delta(delta_) {
  EMBER_CHECK_VALUE(delta > 0, "HuberLoss: delta must be positive, got ", delta);
}
Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return huber_loss(input, target, reduction, delta);
}

KLDivLoss::KLDivLoss(std::string r, bool log_target_)
    : reduction(std::move(r)), log_target(log_target_) {
  EMBER_CHECK_VALUE(
      reduction == "none" || reduction == "mean" || reduction == "batchmean" || reduction == "sum",
      "KLDivLoss: reduction must be 'none', 'mean', 'batchmean' or 'sum', got '", reduction, "'");
}
Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  return kl_div(input, target, reduction, log_target);
}

BCELoss::BCELoss(const Tensor& w, Reduction r) : Loss(r) {
  if (w.defined()) weight = register_buffer("weight", w);
}
Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy(input, target, weight, reduction);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(const Tensor& w, Reduction r, const Tensor& pw) : Loss(r) {
  if (w.defined()) weight = register_buffer("weight", w);
  if (pw.defined()) pos_weight = register_buffer("pos_weight", pw);
}
Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction);
}

NLLLoss::NLLLoss(const Tensor& w, int64_t ignore, Reduction r) : Loss(r), ignore_index(ignore) {
  if (w.defined()) weight = register_buffer("weight", w);
}
Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, ignore_index, reduction, weight);
}

CrossEntropyLoss::CrossEntropyLoss(const Tensor& w, int64_t ignore, Reduction r, double smoothing)
    : Loss(r), ignore_index(ignore), label_smoothing(smoothing) {
  EMBER_CHECK_VALUE(smoothing >= 0 && smoothing <= 1,
                    "CrossEntropyLoss: label_smoothing must be in [0, 1], got ", smoothing);
  if (w.defined()) weight = register_buffer("weight", w);
}
Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, ignore_index, reduction, label_smoothing, weight);
}

Tensor CosineEmbeddingLoss::forward(const Tensor& x1, const Tensor& x2, const Tensor& target) {
  return cosine_embedding_loss(x1, x2, target, margin, reduction);
}

Tensor MarginRankingLoss::forward(const Tensor& x1, const Tensor& x2, const Tensor& target) {
  return margin_ranking_loss(x1, x2, target, margin, reduction);
}

}  // namespace ember::nn

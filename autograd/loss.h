// Differentiable losses (semantics and requirements in ops/loss.h).
#pragma once

#include <string>

#include "ops/loss.h"
#include "runtime/tensor.h"

namespace ember {

// torch.nn.functional.cross_entropy. With class-index targets (int64 [N] or [N, d1, ...]):
// log_softmax over dim 1, then the (label-smoothed, class-weighted) negative log-likelihood; the
// backward is fused (softmax - onehot, no separate log_softmax backward). With class
// probabilities (a floating target of the input's shape, PyTorch >= 1.10): -sum_k w[k] q[k]
// log_softmax[k] per position, q the target smoothed towards 1 / C, Mean dividing by the number
// of positions; ignore_index must then be negative (ValueError). weight: [C] or undefined.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     Reduction reduction = Reduction::Mean, double label_smoothing = 0.0,
                     const Tensor& weight = Tensor());
// Weighted: per position -weight[target] * log_probs[target]; Mean divides by the sum of the
// counted positions' weights (PyTorch's weighted mean).
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index = -100,
                Reduction reduction = Reduction::Mean, const Tensor& weight = Tensor());
// Differentiable w.r.t. both input and target.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// torch.nn.functional.binary_cross_entropy: -weight * (y log(x) + (1 - y) log(1 - x)), each log
// clamped at -100, as PyTorch. Differentiable w.r.t. input (d/dx = w (x - y) / max(x (1 - x),
// 1e-12)) and target. requires: input and target of one floating dtype and shape (ShapeError,
// DTypeError), weight undefined or broadcastable to it, input in [0, 1] (ValueError giving the
// range found; checked on the host). Banned under autocast (autograd/autocast.h): use the
// with-logits form.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const Tensor& weight = Tensor(), Reduction reduction = Reduction::Mean);
// torch.nn.functional.binary_cross_entropy_with_logits: the loss of sigmoid(x) computed stably,
// (1 - y) x + l (log(1 + exp(-|x|)) + max(-x, 0)) with l = 1 + (pos_weight - 1) y, times weight.
// pos_weight broadcasts over the input (a [C] tensor weighs the positives of each of C classes
// in the last dim). Float32 under autocast.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(),
                                        Reduction reduction = Reduction::Mean);

// Regression and embedding losses (torch.nn.functional's), composed of differentiable ops and
// differentiable w.r.t. every floating input. requires: inputs of one floating dtype and device,
// target of the input's shape (ShapeError naming both) unless said otherwise. Float32 under
// autocast.
//   l1_loss               |x - y|
//   smooth_l1_loss        0.5 (x - y)^2 / beta where |x - y| < beta, else |x - y| - 0.5 beta
//                         (beta >= 0, ValueError otherwise; beta 0 is l1_loss)
//   huber_loss            0.5 (x - y)^2 where |x - y| < delta, else delta (|x - y| - 0.5 delta)
//                         (delta > 0)
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
// torch.nn.functional.kl_div: input holds log-probabilities; per element target (log target -
// input), 0 where target is 0 (log_target: exp(target) (target - input)). reduction: "none",
// "mean" (over every element), "batchmean" (the sum over the batch size, the mathematical KL
// divergence) or "sum" (ValueError otherwise).
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false);
// x1, x2 [N, D] (or [D]), target [N] (or 0-D) of 1 or -1: 1 - cos(x1, x2) where target is 1,
// max(0, cos - margin) where it is -1, 0 elsewhere; cos = x1.x2 / sqrt((|x1|^2 + 1e-12)
// (|x2|^2 + 1e-12)) along the last dim, as PyTorch.
Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                             double margin = 0.0, Reduction reduction = Reduction::Mean);
// max(0, -target (x1 - x2) + margin), x1, x2 and target of one shape.
Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                           double margin = 0.0, Reduction reduction = Reduction::Mean);

}  // namespace ember

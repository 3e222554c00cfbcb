// Differentiable losses (semantics and requirements in ops/loss.h).
#pragma once

#include "ops/loss.h"
#include "runtime/tensor.h"

namespace ember {

// torch.nn.functional.cross_entropy with class-index targets: log_softmax over dim 1, then the
// (label-smoothed) negative log-likelihood. The backward is fused: softmax - onehot, no separate
// log_softmax backward.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     Reduction reduction = Reduction::Mean, double label_smoothing = 0.0);
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index = -100,
                Reduction reduction = Reduction::Mean);
// Differentiable w.r.t. both input and target.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace ember

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

}  // namespace ember

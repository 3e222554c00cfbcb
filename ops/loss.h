// Losses: cross entropy (fused with log_softmax), negative log-likelihood and mean squared
// error, with PyTorch's semantics.
//
// Classification: input [N, C] or [N, C, d1, ...] (any floating dtype; float16/bfloat16 through
// float32, Note [Widened half ops] in ops/dispatch.h, their log-probabilities kept in float32),
// target int64 [N] or [N, d1, ...], optional class weights `weight` [C] (the input's dtype and
// device; undefined: all 1). Positions whose target equals ignore_index contribute 0 and are not
// counted; Mean divides by the sum of the counted positions' target weights (their number when
// unweighted; NaN when there are none, as PyTorch).
// requires: ShapeError for wrong ranks or a target shape that does not match; DTypeError for a
//           non-int64 target or a non-floating input; IndexError naming the label, its position
//           and C for a target outside [0, C) that is not ignore_index (on a GPU device too:
//           the targets are checked on the host, see Note [Targets on the host] in
//           ops/loss.cpp); DeviceError naming both devices unless all on one device;
//           ValueError for label_smoothing outside [0, 1]; ShapeError / DTypeError for a weight
//           that is not [C] of the input's dtype.
// These ops are autograd-free; autograd/loss.h holds the differentiable functions.
#pragma once

#include <cstdint>

#include "runtime/tensor.h"

namespace ember {
enum class Reduction { None, Mean, Sum };
}  // namespace ember

namespace ember::ops {

struct NllOutput {
  Tensor loss;        // 0-D for Mean/Sum; the target's shape for None
  Tensor log_probs;   // cross_entropy only: log_softmax of the logits over dim 1
  int64_t count = 0;  // positions not ignored
  double divisor = 0;  // what Mean divides by: count, or the sum of their target weights
};

// With label smoothing e (PyTorch >= 1.10) and weights w: per position
//   (1 - e) * w[target] * (-log_softmax[target]) + e / C * (-sum_k w[k] log_softmax[k]).
NllOutput cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                        Reduction reduction, double label_smoothing,
                        const Tensor& weight = Tensor());
// Gradient w.r.t. the logits (unweighted: g * (softmax - (1 - e) onehot(target) - e / C)), 0 at
// ignored positions, divided by `divisor` (the forward's NllOutput::divisor) for Mean.
Tensor cross_entropy_backward(const Tensor& grad_out, const Tensor& log_probs, const Tensor& target,
                              int64_t ignore_index, Reduction reduction, double label_smoothing,
                              double divisor, const Tensor& weight = Tensor());

// Per position -w[target] * input[target].
NllOutput nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                   Reduction reduction, const Tensor& weight = Tensor());
Tensor nll_loss_backward(const Tensor& grad_out, const Tensor& log_probs, const Tensor& target,
                         int64_t ignore_index, Reduction reduction, double divisor,
                         const Tensor& weight = Tensor());

// (input - target)^2, reduced. requires: same shape, dtype and device (ShapeError / DTypeError).
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction);
// Gradient w.r.t. input (the target's is its negative).
Tensor mse_loss_backward(const Tensor& grad_out, const Tensor& input, const Tensor& target,
                         Reduction reduction);

}  // namespace ember::ops

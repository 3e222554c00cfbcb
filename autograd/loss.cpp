#include "autograd/loss.h"

#include "autograd/function.h"
#include "ops/elementwise.h"

namespace ember {

using Saved = std::vector<Tensor>;
using Grads = std::vector<Tensor>;

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     Reduction reduction, double label_smoothing) {
  ops::NllOutput r = ops::cross_entropy(logits, target, ignore_index, reduction, label_smoothing);
  const int64_t count = r.count;
  return record("CrossEntropyBackward", r.loss, {logits}, {r.log_probs, target},
                [=](const Tensor& g, const Saved& s) {
                  return Grads{ops::cross_entropy_backward(g, s[0], s[1], ignore_index, reduction,
                                                           label_smoothing, count)};
                });
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                Reduction reduction) {
  ops::NllOutput r = ops::nll_loss(log_probs, target, ignore_index, reduction);
  const int64_t count = r.count;
  return record(
      "NllLossBackward", r.loss, {log_probs}, {log_probs, target},
      [=](const Tensor& g, const Saved& s) {
        return Grads{ops::nll_loss_backward(g, s[0], s[1], ignore_index, reduction, count)};
      });
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  const bool want_target = target.requires_grad();
  return record("MseLossBackward", ops::mse_loss(input, target, reduction), {input, target},
                {input, target}, [=](const Tensor& g, const Saved& s) {
                  Tensor gi = ops::mse_loss_backward(g, s[0], s[1], reduction);
                  return Grads{gi, want_target ? ops::neg(gi) : Tensor()};
                });
}

}  // namespace ember

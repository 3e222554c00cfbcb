#include "autograd/dropout.h"

#include "autograd/elementwise.h"
#include "autograd/function.h"
#include "ops/dropout.h"

namespace ember {

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  ops::DropoutOutput r = ops::dropout(x, p, training, gen);
  if (!r.mask.defined()) {
    const bool zero = training && p == 1;
    return record("DropoutBackward", r.out, {x}, {},
                  [zero](const Tensor& g, const std::vector<Tensor>&) {
                    return std::vector<Tensor>{zero ? zeros_like(g) : g};
                  });
  }
  return record("DropoutBackward", r.out, {x}, {r.mask},
                [p](const Tensor& g, const std::vector<Tensor>& s) {
                  return std::vector<Tensor>{ops::dropout_backward(g, s[0], p)};
                });
}

Tensor feature_dropout(const Tensor& x, double p, bool training, Generator* gen) {
  EMBER_CHECK_VALUE(p >= 0 && p <= 1, "dropout2d: p must be in [0, 1], got ", p);
  EMBER_CHECK_SHAPE(x.dim() >= 2, "dropout2d: expected an input of at least 2 dims [N, C, ...], ",
                    "got shape ", x.shape());
  if (!training || p == 0) return x;
  Shape noise(static_cast<size_t>(x.dim()), 1);
  noise[0] = x.size(0);
  noise[1] = x.size(1);
  // The mask holds 0 or 1 / (1 - p): dropout of ones, a constant of the graph.
  const Tensor mask = ops::dropout(ones(noise, {x.dtype(), x.device()}), p, true, gen).out;
  return mul(x, mask);
}

}  // namespace ember

#include "autograd/dropout.h"

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

}  // namespace ember

#include "autograd/softmax.h"

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "ops/softmax.h"

namespace ember {

// Both backwards need only the output, which is saved instead of the input.
Tensor softmax(const Tensor& x, int64_t dim) {
  if (autocast_applies({&x}))
    return autocast_call("softmax", {x}, [&](const auto& c) { return softmax(c[0], dim); });
  Tensor y = ops::softmax(x, dim);
  return record("SoftmaxBackward", y, {x}, {y},
                [dim](const Tensor& g, const std::vector<Tensor>& s) {
                  return std::vector<Tensor>{ops::softmax_backward(g, s[0], dim)};
                });
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  if (autocast_applies({&x}))
    return autocast_call("log_softmax", {x}, [&](const auto& c) { return log_softmax(c[0], dim); });
  Tensor y = ops::log_softmax(x, dim);
  return record("LogSoftmaxBackward", y, {x}, {y},
                [dim](const Tensor& g, const std::vector<Tensor>& s) {
                  return std::vector<Tensor>{ops::log_softmax_backward(g, s[0], dim)};
                });
}

}  // namespace ember

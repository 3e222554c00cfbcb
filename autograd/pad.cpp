#include "autograd/pad.h"

#include "autograd/function.h"

namespace ember {

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, ops::PadMode mode, double value) {
  const Shape xs = x.shape();
  return record("PadBackward", ops::pad(x, pads, mode, value), {x}, {},
                [xs, pads, mode](const Tensor& g, const std::vector<Tensor>&) {
                  return std::vector<Tensor>{ops::pad_backward(g, xs, pads, mode)};
                });
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode,
           double value) {
  return pad(x, pads, ops::pad_mode_from_string("pad", mode), value);
}

}  // namespace ember

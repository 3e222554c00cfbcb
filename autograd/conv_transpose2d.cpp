#include "autograd/conv_transpose2d.h"

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "ops/reduce.h"

namespace ember {

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b,
                        const ConvTranspose2dOptions& options) {
  if (autocast_applies({&x, &w, &b}))
    return autocast_call("conv_transpose2d", {x, w, b}, [&](const auto& c) {
      return conv_transpose2d(c[0], c[1], c[2], options);
    });
  const ops::ConvTranspose2dParams p = options.params;
  Tensor y = ops::conv_transpose2d(x, w, b, p);
  const bool need_x = x.requires_grad(), need_w = w.requires_grad();
  const Shape xs = x.shape(), ws = w.shape();
  std::vector<Tensor> inputs{x, w};
  if (b.defined()) inputs.push_back(b);
  const bool has_bias = b.defined();
  // Save only what the needed gradients read: w for dx, x for dw.
  return record(
      "ConvTranspose2dBackward", y, inputs, {need_w ? x : Tensor(), need_x ? w : Tensor()},
      [p, need_x, need_w, has_bias, xs, ws](const Tensor& g, const std::vector<Tensor>& s) {
        std::vector<Tensor> grads(has_bias ? 3 : 2);
        if (need_x) grads[0] = ops::conv_transpose2d_backward_input(g, s[1], xs, p);
        if (need_w) grads[1] = ops::conv_transpose2d_backward_weight(g, s[0], ws, p);
        if (has_bias) grads[2] = ops::sum(g, {0, 2, 3});
        return grads;
      });
}

}  // namespace ember

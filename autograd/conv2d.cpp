#include "autograd/conv2d.h"

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "ops/reduce.h"

namespace ember {

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dOptions& options) {
  if (autocast_applies({&x, &w, &b}))
    return autocast_call("conv2d", {x, w, b},
                         [&](const auto& c) { return conv2d(c[0], c[1], c[2], options); });
  const ops::Conv2dParams p = options.params;
  Tensor y = ops::conv2d(x, w, b, p);
  const bool need_x = x.requires_grad(), need_w = w.requires_grad();
  const Shape xs = x.shape(), ws = w.shape();
  std::vector<Tensor> inputs{x, w};
  if (b.defined()) inputs.push_back(b);
  // Save only what the needed gradients read: w for dx, x for dw.
  std::vector<Tensor> saved{need_w ? x : Tensor(), need_x ? w : Tensor()};
  const bool has_bias = b.defined();
  return record(
      "Conv2dBackward", y, inputs, std::move(saved),
      [p, need_x, need_w, has_bias, xs, ws](const Tensor& g, const std::vector<Tensor>& s) {
        std::vector<Tensor> grads(has_bias ? 3 : 2);
        if (need_x) grads[0] = ops::conv2d_backward_data(g, s[1], xs, p);
        if (need_w) grads[1] = ops::conv2d_backward_filter(g, s[0], ws, p);
        if (has_bias) grads[2] = ops::sum(g, {0, 2, 3});
        return grads;
      });
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  return conv2d(x, w, b,
                Conv2dOptions().stride(stride).padding(padding).dilation(dilation).groups(groups));
}

}  // namespace ember

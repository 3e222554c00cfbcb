#include "autograd/linear.h"

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "ops/linear.h"

namespace ember {

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (autocast_applies({&x, &w, &b}))
    return autocast_call("linear", {x, w, b},
                         [&](const auto& c) { return linear(c[0], c[1], c[2]); });
  Tensor y = ops::linear(x, w, b);
  std::vector<Tensor> inputs{x, w};
  if (b.defined()) inputs.push_back(b);
  if (!any_requires_grad(inputs)) return y;
  const bool want_x = x.requires_grad(), want_w = w.requires_grad();
  const bool has_b = b.defined(), want_b = has_b && b.requires_grad();
  // x is saved only when w needs a gradient, w only when x does.
  return record("LinearBackward", y, inputs, {want_w ? x : Tensor(), want_x ? w : Tensor()},
                [=, xs = x.shape(), ws = w.shape()](const Tensor& g, const std::vector<Tensor>& s) {
                  // Where a tensor was not saved, a broadcast scalar carries its shape (no
                  // memory); linear_backward never reads it.
                  const Tensor blank = zeros({}, {g.dtype(), g.device()});
                  const Tensor sx = s[0].defined() ? s[0] : blank.expand(xs);
                  const Tensor sw = s[1].defined() ? s[1] : blank.expand(ws);
                  ops::LinearGrads r = ops::linear_backward(g, sx, sw, want_x, want_w, want_b);
                  std::vector<Tensor> out{r.grad_input, r.grad_weight};
                  if (has_b) out.push_back(r.grad_bias);
                  return out;
                });
}

}  // namespace ember

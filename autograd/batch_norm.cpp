#include "autograd/batch_norm.h"

#include "autograd/function.h"
#include "ops/batch_norm.h"

namespace ember {

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps) {
  ops::BatchNormOutput r =
      ops::batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps);
  // Edges only for the tensors that exist: x, then weight and bias when given.
  std::vector<Tensor> inputs{x};
  if (weight.defined()) inputs.push_back(weight);
  if (bias.defined()) inputs.push_back(bias);
  if (!any_requires_grad(inputs)) return r.out;
  const bool want_x = x.requires_grad();
  const bool want_w = weight.defined() && weight.requires_grad();
  const bool want_b = bias.defined() && bias.requires_grad();
  const bool has_w = weight.defined(), has_b = bias.defined();
  const DType bias_dtype = has_b ? bias.dtype() : x.dtype();
  return record("BatchNormBackward", r.out, inputs,
                {x, weight, r.save_mean, r.save_invstd, r.reserve},
                [=](const Tensor& g, const std::vector<Tensor>& s) {
                  ops::BatchNormGrads gr = ops::batch_norm_backward(
                      g, s[0], s[1], s[2], s[3], training, want_x, want_w, want_b, s[4], eps);
                  std::vector<Tensor> out{gr.grad_input};
                  if (has_w) out.push_back(gr.grad_weight);
                  // A half x with float32 parameters: each gradient in its parameter's dtype.
                  if (has_b) out.push_back(gr.grad_bias.to(bias_dtype));
                  return out;
                });
}

}  // namespace ember

#include "autograd/layer_norm.h"

#include "autograd/autocast.h"
#include "autograd/batch_norm.h"
#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/layer_norm.h"
#include "ops/reduce.h"

namespace ember {
namespace {

using Saved = std::vector<Tensor>;
using Grads = std::vector<Tensor>;

// Records the node of one of the three: edges to x and the weight and bias that exist; the
// backward calls `grads(g, x, weight, mean, rstd, wants)`.
template <typename Backward>
Tensor record_norm(const char* name, const ops::NormOutput& r, const Tensor& x, const Tensor& w,
                   const Tensor& b, Backward grads) {
  std::vector<Tensor> inputs{x};
  if (w.defined()) inputs.push_back(w);
  if (b.defined()) inputs.push_back(b);
  if (!any_requires_grad(inputs)) return r.out;
  ops::NormWants want;
  want.input = x.requires_grad();
  want.weight = w.defined() && w.requires_grad();
  want.bias = b.defined() && b.requires_grad();
  const bool has_w = w.defined(), has_b = b.defined();
  return record(name, r.out, inputs, {x, w, r.mean, r.rstd}, [=](const Tensor& g, const Saved& s) {
    ops::NormGrads gr = grads(g, s[0], s[1], s[2], s[3], want);
    Grads out{gr.grad_input};
    if (has_w) out.push_back(gr.grad_weight);
    if (has_b) out.push_back(gr.grad_bias);
    return out;
  });
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  if (autocast_applies({&x, &weight, &bias}))
    return autocast_call("layer_norm", {x, weight, bias}, [&](const auto& c) {
      return layer_norm(c[0], normalized_shape, c[1], c[2], eps);
    });
  const ops::NormOutput r = ops::layer_norm(x, normalized_shape, weight, bias, eps);
  return record_norm("LayerNormBackward", r, x, weight, bias,
                     [normalized_shape](const Tensor& g, const Tensor& xs, const Tensor& w,
                                        const Tensor& m, const Tensor& rs, ops::NormWants want) {
                       return ops::layer_norm_backward(g, xs, normalized_shape, w, m, rs, want);
                     });
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (autocast_applies({&x, &weight, &bias}))
    return autocast_call("group_norm", {x, weight, bias}, [&](const auto& c) {
      return group_norm(c[0], num_groups, c[1], c[2], eps);
    });
  const ops::NormOutput r = ops::group_norm(x, num_groups, weight, bias, eps);
  return record_norm("GroupNormBackward", r, x, weight, bias,
                     [num_groups](const Tensor& g, const Tensor& xs, const Tensor& w,
                                  const Tensor& m, const Tensor& rs, ops::NormWants want) {
                       return ops::group_norm_backward(g, xs, num_groups, w, m, rs, want);
                     });
}

namespace {

// running = (1 - momentum) running + momentum * (the batch mean of each instance's statistic).
void update_running(Tensor& running, const Tensor& per_instance, double momentum) {
  const Tensor batch = ops::mean(per_instance.to(running.dtype()), {0});
  running.copy_(ops::add(ops::mul(running, 1.0 - momentum), ops::mul(batch, momentum)));
}

}  // namespace

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  const char* op = "instance_norm";
  if (!use_input_stats) {
    EMBER_CHECK_VALUE(running_mean.defined() && running_var.defined(), op,
                      ": expected running_mean and running_var when use_input_stats is False");
    return batch_norm(x, weight, bias, running_mean, running_var, false, momentum, eps);
  }
  EMBER_CHECK_SHAPE(x.dim() >= 3, op,
                    ": expected an input of at least 3 dims [N, C, *], got shape ", x.shape());
  int64_t spatial = 1;
  for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
  EMBER_CHECK_VALUE(spatial > 1, op,
                    ": expected more than 1 spatial element when training, got "
                    "input of shape ",
                    x.shape());
  const ops::NormOutput r = ops::instance_norm(x, weight, bias, eps);
  if (running_mean.defined() || running_var.defined()) {
    NoGradGuard no_grad;
    const int64_t n = x.size(0), c = x.size(1);
    Tensor rm = running_mean, rv = running_var;
    if (rm.defined()) update_running(rm, r.mean.view({n, c}), momentum);
    if (rv.defined()) {
      const Tensor flat = x.reshape({n, c, spatial});
      const Tensor wide = ops::is_half(flat.dtype()) ? flat.to(kFloat32) : flat;
      update_running(rv, ops::var(wide, {2}, 1), momentum);
    }
  }
  return record_norm(
      "InstanceNormBackward", r, x, weight, bias,
      [](const Tensor& g, const Tensor& xs, const Tensor& w, const Tensor& m, const Tensor& rs,
         ops::NormWants want) { return ops::instance_norm_backward(g, xs, w, m, rs, want); });
}

}  // namespace ember

// Batch normalisation: checks, output allocation, in-place running-stat updates, then
// the device's batch-norm kernels (kernels/batch_norm_shape.h).
#include "ops/batch_norm.h"

#include "ops/checks.h"
#include "ops/cudnn_ops.h"
#include "ops/dispatch.h"

namespace ember::ops {

namespace {

kernels::BatchNormShape bn_shape(const Tensor& x) {
  kernels::BatchNormShape s;
  s.n = x.size(0);
  s.c = x.size(1);
  for (int64_t d = 2; d < x.dim(); ++d) s.s *= x.size(d);
  return s;
}

// A parameter of x's dtype or, for a half x, float32 (autocast's half activations with float32
// weights and running stats).
void check_param(const char* op, const char* name, const Tensor& p, const Tensor& x) {
  if (!p.defined()) return;
  check_same_device(op, {&x, &p});
  const bool half = is_half(x.dtype());
  EMBER_CHECK_DTYPE(p.dtype() == x.dtype() || (half && p.dtype() == kFloat32), op, ": expected ",
                    name, " of dtype ", x.dtype(), half ? " or float32" : "",
                    " (the input's), got ", p.dtype());
  EMBER_CHECK_SHAPE(p.dim() == 1 && p.size(0) == x.size(1), op, ": expected ", name, " of shape [",
                    x.size(1), "] (one per channel of input ", x.shape(), "), got ", p.shape());
}

void check_input(const char* op, const Tensor& x) {
  EMBER_CHECK_DTYPE(is_floating(x.dtype()), op,
                    ": expected a floating input (float32, float64, float16 or bfloat16), got ",
                    x.dtype());
  EMBER_CHECK_SHAPE(x.dim() >= 2, op,
                    ": expected input of shape [N, C, ...] (2 or more dims), got ", x.shape());
}

const void* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr() : nullptr;
}

}  // namespace

BatchNormOutput batch_norm(const Tensor& x_in, const Tensor& weight, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool training,
                           double momentum, double eps) {
  const char* op = "batch_norm";
  check_input(op, x_in);
  check_param(op, "weight", weight, x_in);
  check_param(op, "bias", bias, x_in);
  check_param(op, "running_mean", running_mean, x_in);
  check_param(op, "running_var", running_var, x_in);
  EMBER_CHECK_VALUE(training || (running_mean.defined() && running_var.defined()), op,
                    ": eval mode needs running_mean and running_var");
  EMBER_CHECK_VALUE(eps > 0, op, ": expected eps > 0, got ", eps);
  const kernels::BatchNormShape s = bn_shape(x_in);
  EMBER_CHECK_VALUE(!training || s.n * s.s != 1, op,
                    ": expected more than 1 value per channel when training, got input of shape ",
                    x_in.shape());
  if (is_half(x_in.dtype())) {  // Note [Widened half ops] in ops/dispatch.h
    const Tensor rm = widen_half(running_mean), rv = widen_half(running_var);
    BatchNormOutput r = batch_norm(x_in.to(kFloat32), widen_half(weight), widen_half(bias), rm, rv,
                                   training, momentum, eps);
    r.out = r.out.to(x_in.dtype());
    for (auto [dst, src] : {std::pair{running_mean, rm}, std::pair{running_var, rv}})
      if (training && dst.defined() && !dst.is_same(src)) dst.copy_(src);  // half running stats
    return r;
  }
  const Tensor x = x_in.contiguous();
  const Tensor w = weight.defined() ? weight.contiguous() : weight;
  const Tensor b = bias.defined() ? bias.contiguous() : bias;
  const TensorOptions o{x.dtype(), x.device()};
  BatchNormOutput r{empty(x.shape(), o), empty({s.c}, o), empty({s.c}, o), Tensor()};
  if (x.numel() == 0) {  // nothing to normalise; running stats stay as they are
    r.save_mean.zero_();
    r.save_invstd.zero_();
    return r;
  }
  // The kernel updates the running stats in place; a non-contiguous one goes through a copy.
  Tensor rm = running_mean.defined() && !running_mean.is_contiguous() ? running_mean.contiguous()
                                                                      : running_mean;
  Tensor rv = running_var.defined() && !running_var.is_contiguous() ? running_var.contiguous()
                                                                    : running_var;
  const Device dev = x.device();
  const kernels::KernelTable& k = kernels_for(dev);
  auto ember = [&](bool timing) {
    // Timed runs (the benchmark preference) leave the running stats alone.
    const bool update = !(training && timing);
    const DataPtr ws = workspace(dev, k.batch_norm_workspace_bytes(s));
    k.batch_norm_fwd(x.dtype(), s, {training, momentum, eps}, x.data_ptr(), ptr_or_null(w),
                     ptr_or_null(b), update && rm.defined() ? rm.data_ptr() : nullptr,
                     update && rv.defined() ? rv.data_ptr() : nullptr, r.out.data_ptr(),
                     r.save_mean.data_ptr(), r.save_invstd.data_ptr(),
                     static_cast<double*>(ws.get()), stream_of(dev));
  };
  const BatchNormArgs args{x.dtype(), s, eps, momentum, w, b};
  if (training)
    run_batch_norm_training(dev, args, x.data_ptr(), rm.defined() ? rm.data_ptr() : nullptr,
                            rv.defined() ? rv.data_ptr() : nullptr, r.out.data_ptr(),
                            r.save_mean.data_ptr(), r.save_invstd.data_ptr(), &r.reserve, ember);
  else
    run_batch_norm_inference(dev, args, x.data_ptr(), rm, rv, r.out.data_ptr(),
                             r.save_mean.data_ptr(), r.save_invstd.data_ptr(), ember);
  if (training) {
    for (auto [dst, src] : {std::pair{running_mean, rm}, std::pair{running_var, rv}}) {
      if (!dst.defined()) continue;
      if (dst.is_same(src))
        dst.bump_version();
      else
        dst.copy_(src);
    }
  }
  return r;
}

BatchNormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& x_in, const Tensor& weight,
                                   const Tensor& save_mean, const Tensor& save_invstd,
                                   bool training, bool want_input, bool want_weight, bool want_bias,
                                   const Tensor& reserve, double eps) {
  const char* op = "batch_norm_backward";
  check_input(op, x_in);
  check_same_device(op, {&x_in, &grad_out});
  EMBER_CHECK_SHAPE(grad_out.shape() == x_in.shape(), op, ": expected grad_out of shape ",
                    x_in.shape(), ", got ", grad_out.shape());
  EMBER_CHECK_DTYPE(grad_out.dtype() == x_in.dtype(), op, ": expected grad_out of dtype ",
                    x_in.dtype(), ", got ", grad_out.dtype());
  check_param(op, "weight", weight, x_in);
  check_param(op, "save_mean", save_mean, x_in);
  check_param(op, "save_invstd", save_invstd, x_in);
  if (is_half(x_in.dtype())) {  // Note [Widened half ops] in ops/dispatch.h
    BatchNormGrads g = batch_norm_backward(
        grad_out.to(kFloat32), x_in.to(kFloat32), widen_half(weight), widen_half(save_mean),
        widen_half(save_invstd), training, want_input, want_weight, want_bias, reserve, eps);
    // The parameters' gradients in the weight's dtype (autograd/batch_norm.cpp converts the
    // bias's when it differs).
    const DType pd = weight.defined() ? weight.dtype() : x_in.dtype();
    if (want_input) g.grad_input = g.grad_input.to(x_in.dtype());
    if (want_weight) g.grad_weight = g.grad_weight.to(pd);
    if (want_bias) g.grad_bias = g.grad_bias.to(pd);
    return g;
  }
  const kernels::BatchNormShape s = bn_shape(x_in);
  const TensorOptions o{x_in.dtype(), x_in.device()};
  BatchNormGrads g;
  if (want_input) g.grad_input = empty(x_in.shape(), o);
  if (want_weight) g.grad_weight = empty({s.c}, o);
  if (want_bias) g.grad_bias = empty({s.c}, o);
  if (x_in.numel() == 0) {
    if (want_weight) g.grad_weight.zero_();
    if (want_bias) g.grad_bias.zero_();
    return g;
  }
  const Tensor x = x_in.contiguous(), dy = grad_out.contiguous();
  const Tensor w = weight.defined() ? weight.contiguous() : weight;
  const Tensor sm = save_mean.contiguous(), si = save_invstd.contiguous();
  void* dx = want_input ? g.grad_input.data_ptr() : nullptr;
  void* dw = want_weight ? g.grad_weight.data_ptr() : nullptr;
  void* db = want_bias ? g.grad_bias.data_ptr() : nullptr;
  const Device dev = x.device();
  auto ember = [&](bool) {
    const kernels::KernelTable& k = kernels_for(dev);
    const DataPtr ws = workspace(dev, k.batch_norm_workspace_bytes(s));
    k.batch_norm_bwd(x.dtype(), s, training, x.data_ptr(), dy.data_ptr(), ptr_or_null(w),
                     sm.data_ptr(), si.data_ptr(), dx, dw, db, static_cast<double*>(ws.get()),
                     stream_of(dev));
  };
  if (!training) {
    ember(false);  // eval's backward is a scaling, which cuDNN's batch norm has no call for
    return g;
  }
  const BatchNormArgs args{x.dtype(), s, eps, 0.0, w, Tensor()};
  run_batch_norm_backward(dev, args, x.data_ptr(), dy.data_ptr(), sm.data_ptr(), si.data_ptr(),
                          reserve, dx, dw, db, ember);
  return g;
}

}  // namespace ember::ops

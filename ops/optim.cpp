// Optimiser updates: checks that every buffer matches the parameter, then the device's fused
// update kernel.
#include "ops/optim.h"

#include "ops/amp.h"
#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ember::ops {

namespace {

void check_like(const char* op, const char* what, const Tensor& p, const Tensor& t) {
  EMBER_CHECK_VALUE(t.defined(), op, ": ", what, " is undefined");
  EMBER_CHECK_SHAPE(t.shape() == p.shape(), op, ": ", what, " has shape ", t.shape(),
                    ", expected the parameter's ", p.shape());
  EMBER_CHECK_DTYPE(t.dtype() == p.dtype(), op, ": ", what, " has dtype ", t.dtype(),
                    ", expected the parameter's ", p.dtype());
  EMBER_CHECK_DEVICE(t.device() == p.device(), op, ": ", what, " is on ", t.device(),
                     " but the parameter is on ", p.device());
  EMBER_CHECK_VALUE(t.is_contiguous(), op, ": ", what, " is not contiguous");
}

void check_param(const char* op, const Tensor& p) {
  EMBER_CHECK_DTYPE(is_floating(p.dtype()), op, ": parameter has dtype ", p.dtype(),
                    "; expected float32, float64, float16 or bfloat16");
  EMBER_CHECK_VALUE(p.is_contiguous(), op, ": parameter is not contiguous");
}

// The device pointers of `amp` (checked against the parameter), or none.
kernels::AmpStep amp_step_of(const char* op, const Tensor& p, const AmpTensors* amp) {
  kernels::AmpStep a;
  if (amp == nullptr) return a;
  auto scalar = [&](const char* what, const Tensor& t, DType want) -> const void* {
    if (!t.defined()) return nullptr;
    EMBER_CHECK_DTYPE(t.dtype() == want, op, ": expected ", what, " of dtype ", want, ", got ",
                      t.dtype());
    EMBER_CHECK_SHAPE(t.numel() == 1 && t.is_contiguous(), op, ": expected ", what,
                      " of one element, got shape ", t.shape());
    EMBER_CHECK_DEVICE(t.device() == p.device(), op, ": ", what, " is on ", t.device(),
                       " but the parameter is on ", p.device());
    return t.data_ptr();
  };
  a.grad_scale = static_cast<const float*>(scalar("grad_scale", amp->grad_scale, kFloat32));
  a.found_inf = static_cast<const float*>(scalar("found_inf", amp->found_inf, kFloat32));
  a.step = static_cast<const double*>(scalar("the step count", amp->step, kFloat64));
  return a;
}

// After the update: the device step count advanced unless the step was skipped.
void count_step(const AmpTensors* amp) {
  if (amp != nullptr && amp->step.defined()) amp_count_step_(amp->step, amp->found_inf);
}

}  // namespace

void sgd_step_(const Tensor& p, const Tensor& grad, const Tensor& momentum_buffer,
               const SgdParams& s_in, const char* op, const AmpTensors* amp) {
  check_param(op, p);
  SgdParams s = s_in;
  s.amp = amp_step_of(op, p, amp);
  check_like(op, "the gradient", p, grad);
  if (s.momentum != 0.0 || momentum_buffer.defined())
    check_like(op, "the momentum buffer", p, momentum_buffer);
  const Device dev = p.device();
  kernels_for(dev).sgd_step(p.dtype(), p.data_ptr(), grad.data_ptr(),
                            momentum_buffer.defined() ? momentum_buffer.data_ptr() : nullptr,
                            p.numel(), s, stream_of(dev));
  count_step(amp);
  p.bump_version();
  if (momentum_buffer.defined()) momentum_buffer.bump_version();
}

void adam_step_(const Tensor& p, const Tensor& grad, const Tensor& exp_avg,
                const Tensor& exp_avg_sq, const AdamParams& s_in, const char* op,
                const AmpTensors* amp) {
  check_param(op, p);
  AdamParams s = s_in;
  s.amp = amp_step_of(op, p, amp);
  check_like(op, "the gradient", p, grad);
  check_like(op, "exp_avg", p, exp_avg);
  check_like(op, "exp_avg_sq", p, exp_avg_sq);
  const Device dev = p.device();
  kernels_for(dev).adam_step(p.dtype(), p.data_ptr(), grad.data_ptr(), exp_avg.data_ptr(),
                             exp_avg_sq.data_ptr(), p.numel(), s, stream_of(dev));
  count_step(amp);
  p.bump_version();
  exp_avg.bump_version();
  exp_avg_sq.bump_version();
}

void rmsprop_step_(const Tensor& p, const Tensor& grad, const Tensor& square_avg,
                   const Tensor& grad_avg, const Tensor& momentum_buffer, const RmspropParams& s_in,
                   const char* op, const AmpTensors* amp) {
  check_param(op, p);
  RmspropParams s = s_in;
  s.amp = amp_step_of(op, p, amp);
  check_like(op, "the gradient", p, grad);
  check_like(op, "square_avg", p, square_avg);
  if (s.centered) check_like(op, "grad_avg", p, grad_avg);
  if (s.momentum > 0.0) check_like(op, "the momentum buffer", p, momentum_buffer);
  const Device dev = p.device();
  kernels_for(dev).rmsprop_step(p.dtype(), p.data_ptr(), grad.data_ptr(), square_avg.data_ptr(),
                                s.centered ? grad_avg.data_ptr() : nullptr,
                                s.momentum > 0.0 ? momentum_buffer.data_ptr() : nullptr, p.numel(),
                                s, stream_of(dev));
  count_step(amp);
  p.bump_version();
  square_avg.bump_version();
  if (s.centered) grad_avg.bump_version();
  if (s.momentum > 0.0) momentum_buffer.bump_version();
}

void adagrad_step_(const Tensor& p, const Tensor& grad, const Tensor& sum,
                   const AdagradParams& s_in, const char* op, const AmpTensors* amp) {
  check_param(op, p);
  AdagradParams s = s_in;
  s.amp = amp_step_of(op, p, amp);
  check_like(op, "the gradient", p, grad);
  check_like(op, "sum", p, sum);
  const Device dev = p.device();
  kernels_for(dev).adagrad_step(p.dtype(), p.data_ptr(), grad.data_ptr(), sum.data_ptr(), p.numel(),
                                s, stream_of(dev));
  count_step(amp);
  p.bump_version();
  sum.bump_version();
}

void clip_grad_scale_(const Tensor& grad, const Tensor& total_norm, double max_norm) {
  const char* op = "clip_grad_norm_";
  EMBER_CHECK_DTYPE(is_floating(grad.dtype()), op, ": gradient has dtype ", grad.dtype(),
                    "; expected a floating dtype");
  EMBER_CHECK_VALUE(grad.is_contiguous(), op, ": gradient is not contiguous");
  EMBER_CHECK_DTYPE(is_floating(total_norm.dtype()), op, ": total norm has dtype ",
                    total_norm.dtype(), "; expected a floating dtype");
  EMBER_CHECK_SHAPE(total_norm.numel() == 1, op,
                    ": expected a total norm of one element, got shape ", total_norm.shape());
  EMBER_CHECK_DEVICE(total_norm.device() == grad.device(), op, ": total norm is on ",
                     total_norm.device(), " but the gradient is on ", grad.device());
  const Tensor norm = total_norm.contiguous();
  const Device dev = grad.device();
  kernels_for(dev).clip_grad_scale(grad.dtype(), grad.data_ptr(), grad.numel(), norm.dtype(),
                                   norm.data_ptr(), max_norm, stream_of(dev));
  grad.bump_version();
}

}  // namespace ember::ops

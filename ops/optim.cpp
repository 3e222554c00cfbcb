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

}  // namespace ember::ops

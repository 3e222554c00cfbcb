// The loss scaler's device ops: operand checks, then the device's kernels (ops/amp.h).
#include "ops/amp.h"

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ember::ops {
namespace {

void check_scalar(const char* op, const char* name, const Tensor& t, DType want, Device dev) {
  EMBER_CHECK_VALUE(t.defined(), op, ": ", name, " is undefined");
  EMBER_CHECK_DTYPE(t.dtype() == want, op, ": expected ", name, " of dtype ", want, ", got ",
                    t.dtype());
  EMBER_CHECK_SHAPE(t.numel() == 1, op, ": expected ", name, " of one element, got shape ",
                    t.shape());
  EMBER_CHECK_DEVICE(t.device() == dev, op, ": ", name, " is on ", t.device(), ", expected ", dev);
}

}  // namespace

void amp_non_finite_check_and_unscale_(const std::vector<Tensor>& grads, const Tensor& found_inf,
                                       const Tensor& scale) {
  const char* op = "amp_non_finite_check_and_unscale_";
  EMBER_CHECK_VALUE(found_inf.defined(), op, ": found_inf is undefined");
  const Device dev = found_inf.device();
  check_scalar(op, "found_inf", found_inf, kFloat32, dev);
  if (scale.defined()) check_scalar(op, "scale", scale, kFloat32, dev);
  const Tensor fi = found_inf.contiguous(), sc = scale.defined() ? scale.contiguous() : scale;
  const kernels::KernelTable& k = kernels_for(dev);
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    EMBER_CHECK_DEVICE(g.device() == dev, op, ": gradient ", i, " is on ", g.device(),
                       " but found_inf is on ", dev);
    EMBER_CHECK_DTYPE(is_floating(g.dtype()), op, ": gradient ", i, " has dtype ", g.dtype(),
                      "; expected a floating dtype");
    if (g.numel() == 0) continue;
    Tensor c = g.is_contiguous() ? g : g.contiguous();
    k.amp_unscale(g.dtype(), c.data_ptr(), c.numel(), static_cast<float*>(fi.data_ptr()),
                  sc.defined() ? static_cast<const float*>(sc.data_ptr()) : nullptr,
                  stream_of(dev));
    if (!c.is_same(g)) Tensor(g).copy_(c);  // a handle to g's storage
    if (sc.defined()) g.bump_version();
  }
  if (!fi.is_same(found_inf)) Tensor(found_inf).copy_(fi);
  found_inf.bump_version();
}

void amp_update_scale_(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                       double growth_factor, double backoff_factor, int64_t growth_interval) {
  const char* op = "amp_update_scale_";
  EMBER_CHECK_VALUE(scale.defined(), op, ": scale is undefined");
  const Device dev = scale.device();
  check_scalar(op, "scale", scale, kFloat32, dev);
  check_scalar(op, "growth_tracker", growth_tracker, kInt32, dev);
  check_scalar(op, "found_inf", found_inf, kFloat32, dev);
  EMBER_CHECK_VALUE(scale.is_contiguous() && growth_tracker.is_contiguous(), op,
                    ": scale and growth_tracker must be contiguous (they are updated in place)");
  const Tensor fi = found_inf.contiguous();
  kernels_for(dev).amp_update_scale(static_cast<float*>(scale.data_ptr()),
                                    static_cast<int32_t*>(growth_tracker.data_ptr()),
                                    static_cast<const float*>(fi.data_ptr()), growth_factor,
                                    backoff_factor, growth_interval, stream_of(dev));
  scale.bump_version();
  growth_tracker.bump_version();
}

void amp_count_step_(const Tensor& step, const Tensor& found_inf) {
  const char* op = "amp_count_step_";
  EMBER_CHECK_VALUE(step.defined(), op, ": step is undefined");
  const Device dev = step.device();
  check_scalar(op, "step", step, kFloat64, dev);
  if (found_inf.defined()) check_scalar(op, "found_inf", found_inf, kFloat32, dev);
  const Tensor fi = found_inf.defined() ? found_inf.contiguous() : found_inf;
  kernels_for(dev).amp_count_step(static_cast<double*>(step.data_ptr()),
                                  fi.defined() ? static_cast<const float*>(fi.data_ptr()) : nullptr,
                                  stream_of(dev));
  step.bump_version();
}

}  // namespace ember::ops

// Layer, group and instance norm: checks, the rows each one normalises (kernels/norm_rows_shape.h),
// then the device's norm_rows kernels on contiguous data.
#include "ops/layer_norm.h"

#include <limits>

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ember::ops {

using kernels::NormRowsShape;

namespace {

DType stat_dtype(DType t) {
  return t == kFloat64 ? kFloat64 : kFloat32;
}

// weight or bias: undefined, or of `shape` with x's dtype and device.
void check_param(const char* op, const char* name, const Tensor& p, const Tensor& x,
                 const Shape& shape) {
  if (!p.defined()) return;
  check_same_device(op, {&x, &p});
  EMBER_CHECK_DTYPE(p.dtype() == x.dtype(), op, ": expected ", name, " of dtype ", x.dtype(),
                    " (the input's), got ", p.dtype());
  EMBER_CHECK_SHAPE(p.shape() == shape, op, ": expected ", name, " of shape ", shape, ", got ",
                    p.shape());
}

// [N, C, *]: rows of one (sample, group) each, with C / groups channels of HW elements.
NormRowsShape channel_rows(const char* op, const Tensor& x, int64_t groups, int64_t min_dim) {
  EMBER_CHECK_SHAPE(x.dim() >= min_dim, op, ": expected an input of at least ", min_dim,
                    " dims [N, C, ...], got shape ", x.shape());
  const int64_t n = x.size(0), c = x.size(1);
  EMBER_CHECK_VALUE(groups > 0 && c % groups == 0, op,
                    ": expected the number of channels to be divisible by num_groups, got input "
                    "of shape ",
                    x.shape(), " (", c, " channels) and num_groups=", groups);
  int64_t hw = 1;
  for (int64_t d = 2; d < x.dim(); ++d) hw *= x.size(d);
  NormRowsShape s;
  s.rows = n * groups;
  s.len = c / groups * hw;
  s.groups = groups;
  s.inner = hw;
  return s;
}

NormRowsShape layer_rows(const Tensor& x, const Shape& normalized) {
  const char* op = "layer_norm";
  const int64_t k = static_cast<int64_t>(normalized.size());
  EMBER_CHECK_VALUE(k >= 1, op, ": expected a non-empty normalized_shape, got ", normalized);
  bool match = x.dim() >= k;
  for (int64_t d = 0; match && d < k; ++d) match = x.size(x.dim() - k + d) == normalized[d];
  EMBER_CHECK_SHAPE(match, op, ": given normalized_shape=", normalized,
                    ", expected an input whose trailing dims are ", normalized, ", got shape ",
                    x.shape());
  NormRowsShape s;
  s.len = checked_numel(normalized);
  s.rows = 1;
  for (int64_t d = 0; d < x.dim() - k; ++d) s.rows *= x.size(d);
  return s;
}

NormOutput forward(const Tensor& x_in, const Tensor& w, const Tensor& b, NormRowsShape s,
                   double eps) {
  const Device dev = x_in.device();
  const Tensor x = x_in.contiguous();
  const DType t = x.dtype();
  s.eps = eps;
  NormOutput r;
  r.out = empty(x.shape(), {t, dev});
  r.mean = empty({s.rows}, {stat_dtype(t), dev});
  r.rstd = empty({s.rows}, {stat_dtype(t), dev});
  if (s.rows == 0) return r;
  if (s.len == 0) {  // empty rows: NaN statistics, as PyTorch's mean of nothing
    r.mean.fill_(std::numeric_limits<double>::quiet_NaN());
    r.rstd.fill_(std::numeric_limits<double>::quiet_NaN());
    return r;
  }
  const Tensor wc = w.defined() ? w.contiguous() : Tensor(),
               bc = b.defined() ? b.contiguous() : Tensor();
  kernels_for(dev).norm_rows_fwd(t, s, x.data_ptr(), wc.defined() ? wc.data_ptr() : nullptr,
                                 bc.defined() ? bc.data_ptr() : nullptr, r.out.data_ptr(),
                                 r.mean.data_ptr(), r.rstd.data_ptr(), stream_of(dev));
  return r;
}

NormGrads backward(const char* op, const Tensor& g_in, const Tensor& x_in, const Tensor& w,
                   const Tensor& mean, const Tensor& rstd, NormRowsShape s, NormWants want) {
  const Device dev = check_same_device(op, {&x_in, &g_in, &mean, &rstd});
  EMBER_CHECK_SHAPE(g_in.shape() == x_in.shape(), op, ": expected grad_out of shape ", x_in.shape(),
                    ", got ", g_in.shape());
  EMBER_CHECK_DTYPE(g_in.dtype() == x_in.dtype(), op, ": expected grad_out of dtype ", x_in.dtype(),
                    ", got ", g_in.dtype());
  const DType t = x_in.dtype();
  EMBER_CHECK_SHAPE(mean.numel() == s.rows && rstd.numel() == s.rows, op, ": expected mean and ",
                    "rstd of ", s.rows, " elements, got shapes ", mean.shape(), " and ",
                    rstd.shape());
  EMBER_CHECK_DTYPE(mean.dtype() == stat_dtype(t) && rstd.dtype() == stat_dtype(t), op,
                    ": expected mean and rstd of dtype ", stat_dtype(t), ", got ", mean.dtype(),
                    " and ", rstd.dtype());
  const int64_t channels = s.channels();
  NormGrads r;
  if (want.input) r.grad_input = empty(x_in.shape(), {t, dev});
  const Shape pshape = w.defined() ? w.shape() : Shape{channels};
  if (want.weight) r.grad_weight = empty(pshape, {t, dev});
  if (want.bias) r.grad_bias = empty(pshape, {t, dev});
  if (s.rows * s.len == 0) {
    for (Tensor* g : {&r.grad_input, &r.grad_weight, &r.grad_bias})
      if (g->defined()) g->fill_(0.0);
    return r;
  }
  const Tensor x = x_in.contiguous(), g = g_in.contiguous();
  const Tensor wc = w.defined() ? w.contiguous() : Tensor();
  const Tensor mc = mean.contiguous(), rc = rstd.contiguous();
  const kernels::KernelTable& k = kernels_for(dev);
  DataPtr ws;
  if (want.weight || want.bias) ws = workspace(dev, k.norm_rows_bwd_workspace_bytes(s));
  auto ptr = [](const Tensor& p) { return p.defined() ? p.data_ptr() : nullptr; };
  k.norm_rows_bwd(t, s, x.data_ptr(), g.data_ptr(), ptr(wc), mc.data_ptr(), rc.data_ptr(),
                  ptr(r.grad_input), ptr(r.grad_weight), ptr(r.grad_bias),
                  static_cast<double*>(ws.get()), stream_of(dev));
  return r;
}

}  // namespace

NormOutput layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                      const Tensor& bias, double eps) {
  const char* op = "layer_norm";
  check_floating(op, x);
  const NormRowsShape s = layer_rows(x, normalized_shape);
  check_param(op, "weight", weight, x, normalized_shape);
  check_param(op, "bias", bias, x, normalized_shape);
  return forward(x, weight, bias, s, eps);
}

NormOutput group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                      double eps) {
  const char* op = "group_norm";
  check_floating(op, x);
  const NormRowsShape s = channel_rows(op, x, num_groups, 2);
  check_param(op, "weight", weight, x, {x.size(1)});
  check_param(op, "bias", bias, x, {x.size(1)});
  return forward(x, weight, bias, s, eps);
}

NormOutput instance_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "instance_norm";
  check_floating(op, x);
  EMBER_CHECK_SHAPE(x.dim() >= 3, op,
                    ": expected an input of at least 3 dims [N, C, *], got shape ", x.shape());
  const NormRowsShape s = channel_rows(op, x, x.size(1), 3);
  check_param(op, "weight", weight, x, {x.size(1)});
  check_param(op, "bias", bias, x, {x.size(1)});
  return forward(x, weight, bias, s, eps);
}

NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                              const Shape& normalized_shape, const Tensor& weight,
                              const Tensor& mean, const Tensor& rstd, NormWants want) {
  return backward("layer_norm_backward", grad_out, x, weight, mean, rstd,
                  layer_rows(x, normalized_shape), want);
}

NormGrads group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t num_groups,
                              const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                              NormWants want) {
  const char* op = "group_norm_backward";
  return backward(op, grad_out, x, weight, mean, rstd, channel_rows(op, x, num_groups, 2), want);
}

NormGrads instance_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                 const Tensor& mean, const Tensor& rstd, NormWants want) {
  const char* op = "instance_norm_backward";
  EMBER_CHECK_SHAPE(x.dim() >= 3, op, ": expected an input of at least 3 dims, got shape ",
                    x.shape());
  return backward(op, grad_out, x, weight, mean, rstd, channel_rows(op, x, x.size(1), 3), want);
}

}  // namespace ember::ops

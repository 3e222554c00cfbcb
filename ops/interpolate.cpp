// interpolate: checks, the kernels' InterpShape, then the device's interpolate kernels.
#include "ops/interpolate.h"

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ember::ops {

using kernels::InterpShape;

namespace {

InterpShape make_shape(const char* op, const Shape& xs, const InterpolateParams& p) {
  const int64_t spatial = static_cast<int64_t>(xs.size()) - 2;
  EMBER_CHECK_SHAPE(spatial == 1 || spatial == 2, op,
                    ": expected a 3-D [N, C, W] or 4-D [N, C, H, W] input, got shape ", xs);
  EMBER_CHECK_VALUE(static_cast<int64_t>(p.size.size()) == spatial, op, ": expected ", spatial,
                    " output size(s) for an input of shape ", xs, ", got ", Shape(p.size));
  EMBER_CHECK_VALUE(p.scales.empty() || static_cast<int64_t>(p.scales.size()) == spatial, op,
                    ": expected ", spatial, " scale factor(s), got ", p.scales.size());
  bool positive = true;
  for (int64_t d = 0; d < spatial; ++d) positive = positive && xs[2 + d] > 0 && p.size[d] > 0;
  EMBER_CHECK_VALUE(positive, op, ": input and output sizes should be greater than 0, got input ",
                    "shape ", xs, " and output size ", Shape(p.size));
  InterpShape s;
  s.planes = xs[0] * xs[1];
  s.mode = p.mode;
  s.align_corners = p.align_corners;
  s.iw = xs.back();
  s.ow = p.size.back();
  s.scale_w = p.scales.empty() ? 0.0 : p.scales.back();
  if (spatial == 2) {
    s.ih = xs[2];
    s.oh = p.size[0];
    s.scale_h = p.scales.empty() ? 0.0 : p.scales[0];
  }
  return s;
}

Shape output_shape(const Shape& xs, const InterpolateParams& p) {
  Shape ys{xs[0], xs[1]};
  for (int64_t v : p.size) ys.push_back(v);
  return ys;
}

}  // namespace

Tensor interpolate(const Tensor& x_in, const InterpolateParams& p) {
  const char* op = "interpolate";
  check_floating(op, x_in);
  const InterpShape s = make_shape(op, x_in.shape(), p);
  const Device dev = x_in.device();
  Tensor y = empty(output_shape(x_in.shape(), p), {x_in.dtype(), dev});
  if (y.numel() == 0) return y;
  const Tensor x = x_in.contiguous();
  kernels_for(dev).interpolate_fwd(x.dtype(), s, x.data_ptr(), y.data_ptr(), stream_of(dev));
  return y;
}

Tensor interpolate_backward(const Tensor& grad_out, const Shape& x_shape,
                            const InterpolateParams& p) {
  const char* op = "interpolate_backward";
  check_floating(op, grad_out);
  const InterpShape s = make_shape(op, x_shape, p);
  const Shape ys = output_shape(x_shape, p);
  EMBER_CHECK_SHAPE(grad_out.shape() == ys, op, ": expected grad_out of shape ", ys, ", got ",
                    grad_out.shape());
  const Device dev = grad_out.device();
  Tensor dx = empty(x_shape, {grad_out.dtype(), dev});
  if (dx.numel() == 0) return dx;
  const Tensor g = grad_out.contiguous();
  kernels_for(dev).interpolate_bwd(g.dtype(), s, g.data_ptr(), dx.data_ptr(), stream_of(dev));
  return dx;
}

}  // namespace ember::ops

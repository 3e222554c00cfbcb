// Pooling: parameter checks and PyTorch's output-size rules, then the device's pooling kernels
// (kernels/pool_shape.h).
#include "ops/pool2d.h"

#include <optional>

#include "ops/checks.h"
#include "ops/cudnn_ops.h"
#include "ops/dispatch.h"

namespace ember::ops {

using kernels::KernelTable;
using kernels::PoolShape;

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Floor division (num may be negative when the window does not fit).
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

namespace {

void check_input(const char* op, const Tensor& x) {
  check_floating(op, x);
  EMBER_CHECK_SHAPE(x.dim() == 4, op, ": expected a 4-D input [N, C, H, W], got shape ", x.shape());
}

// Fills the window fields of a PoolShape for input shape xs and checks them like PyTorch.
PoolShape window_shape(const char* op, const Shape& xs, std::array<int64_t, 2> kernel,
                       std::array<int64_t, 2> stride, std::array<int64_t, 2> pad,
                       std::array<int64_t, 2> dil, bool ceil_mode) {
  EMBER_CHECK_SHAPE(xs.size() == 4, op, ": expected a 4-D input [N, C, H, W], got shape ", xs);
  for (int i = 0; i < 2; ++i) {
    if (stride[i] == 0) stride[i] = kernel[i];
    EMBER_CHECK_VALUE(kernel[i] >= 1 && stride[i] >= 1 && dil[i] >= 1, op,
                      ": kernel, stride and dilation must be positive, got kernel [", kernel[0],
                      ", ", kernel[1], "], stride [", stride[0], ", ", stride[1], "], dilation [",
                      dil[0], ", ", dil[1], "]");
    EMBER_CHECK_VALUE(pad[i] >= 0 && pad[i] <= kernel[i] / 2, op, ": padding [", pad[0], ", ",
                      pad[1], "] must be non-negative and at most half the kernel [", kernel[0],
                      ", ", kernel[1], "]");
  }
  PoolShape s;
  s.n = xs[0], s.c = xs[1], s.h = xs[2], s.w = xs[3];
  s.kh = kernel[0], s.kw = kernel[1], s.sh = stride[0], s.sw = stride[1];
  s.ph = pad[0], s.pw = pad[1], s.dh = dil[0], s.dw = dil[1];
  s.oh = pool_output_size(s.h, s.kh, s.ph, s.sh, s.dh, ceil_mode);
  s.ow = pool_output_size(s.w, s.kw, s.pw, s.sw, s.dw, ceil_mode);
  EMBER_CHECK_SHAPE(s.oh >= 1 && s.ow >= 1, op, ": input shape ", xs, " is too small for kernel [",
                    kernel[0], ", ", kernel[1], "] (dilation [", dil[0], ", ", dil[1],
                    "], padding [", pad[0], ", ", pad[1], "]): output size would be ", s.oh, "x",
                    s.ow);
  return s;
}

Shape out_shape(const PoolShape& s) {
  return Shape{s.n, s.c, s.oh, s.ow};
}

// The averaging pools, forward and backward, share one shape of dispatch: `in` (contiguous)
// through the table's entry `kernel` into a new tensor of shape `out`, or on cuda through
// cuDNN's average pooling of window `as_avg` (nullptr: cuDNN has no such pooling).
using AvgPoolKernel = decltype(KernelTable::avg_pool2d_fwd);

Tensor run_avg_pool(const Tensor& in, const PoolShape& s, const Shape& out,
                    AvgPoolKernel KernelTable::*kernel, bool backward, const PoolShape* as_avg) {
  const Device dev = in.device();
  Tensor r = empty(out, {in.dtype(), dev});
  if (r.numel() == 0) return r;
  const Tensor c = in.contiguous();
  auto ember = [&](bool) {
    (kernels_for(dev).*kernel)(in.dtype(), s, c.data_ptr(), r.data_ptr(), stream_of(dev));
  };
  if (as_avg == nullptr)
    ember(false);
  else if (backward)
    run_pool_backward(dev, PoolMode::avg, in.dtype(), *as_avg, nullptr, nullptr, c.data_ptr(),
                      r.data_ptr(), ember);
  else
    run_pool_forward(dev, PoolMode::avg, in.dtype(), *as_avg, c.data_ptr(), r.data_ptr(), ember);
  return r;
}

// Adaptive average pooling as the average pooling it equals when the output divides the input
// (windows of in / out, as many strides), or nullopt.
std::optional<PoolShape> as_average(const PoolShape& s) {
  if (s.h % s.oh != 0 || s.w % s.ow != 0) return std::nullopt;
  PoolShape a = s;
  a.kh = a.sh = s.h / s.oh;
  a.kw = a.sw = s.w / s.ow;
  return a;
}

void check_grad(const char* op, const Tensor& g, const Shape& want) {
  check_floating(op, g);
  EMBER_CHECK_SHAPE(g.shape() == want, op, ": expected grad_y of shape ", want, ", got ",
                    g.shape());
}

}  // namespace

std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const MaxPool2dParams& p, bool need_indices) {
  check_input("max_pool2d", x);
  const PoolShape s =
      window_shape("max_pool2d", x.shape(), p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
  const Device dev = x.device();
  Tensor y = empty(out_shape(s), {x.dtype(), dev}), idx;
  auto ember = [&](bool) {
    idx = empty(out_shape(s), {kInt64, dev});
    if (y.numel() == 0) return;
    const Tensor xc = x.contiguous();
    kernels_for(dev).max_pool2d_fwd(x.dtype(), s, xc.data_ptr(), y.data_ptr(), idx.data<int64_t>(),
                                    stream_of(dev));
  };
  if (need_indices || y.numel() == 0) {
    ember(false);
    return {y, idx};
  }
  const Tensor xc = x.contiguous();
  if (run_pool_forward(dev, PoolMode::max, x.dtype(), s, xc.data_ptr(), y.data_ptr(), ember))
    idx = Tensor();
  return {y, idx};
}

Tensor max_pool2d_backward(const Tensor& grad_y, const Tensor& x, const Tensor& y,
                           const MaxPool2dParams& p) {
  const char* op = "max_pool2d_backward";
  check_input(op, x);
  const Device dev = check_same_device(op, {&grad_y, &x, &y});
  const PoolShape s =
      window_shape(op, x.shape(), p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
  check_grad(op, grad_y, out_shape(s));
  EMBER_CHECK_SHAPE(y.shape() == out_shape(s) && y.dtype() == x.dtype(), op,
                    ": expected the forward's output y of shape ", out_shape(s), " and dtype ",
                    x.dtype(), ", got ", y.shape(), " ", y.dtype());
  Tensor dx = empty(x.shape(), {grad_y.dtype(), dev});
  if (dx.numel() == 0) return dx;
  const Tensor xc = x.contiguous(), yc = y.contiguous(), gc = grad_y.contiguous();
  run_pool_backward(dev, PoolMode::max, x.dtype(), s, xc.data_ptr(), yc.data_ptr(), gc.data_ptr(),
                    dx.data_ptr(), [&](bool) {
                      // Ember's backward routes by indices: find them again from x.
                      const Tensor idx = max_pool2d(x, p, true).second;
                      const KernelTable& k = kernels_for(dev);
                      const DataPtr ws = workspace(dev, k.max_pool2d_bwd_workspace_bytes(s));
                      k.max_pool2d_bwd(grad_y.dtype(), s, gc.data_ptr(), idx.data<int64_t>(),
                                       dx.data_ptr(), static_cast<int64_t*>(ws.get()),
                                       stream_of(dev));
                    });
  return dx;
}

Tensor max_pool2d_backward(const Tensor& grad_y, const Tensor& indices, const Shape& x_shape) {
  const char* op = "max_pool2d_backward";
  const Device dev = check_same_device(op, {&grad_y, &indices});
  EMBER_CHECK_SHAPE(x_shape.size() == 4 && grad_y.dim() == 4 && indices.shape() == grad_y.shape() &&
                        grad_y.size(0) == x_shape[0] && grad_y.size(1) == x_shape[1],
                    op, ": grad_y shape ", grad_y.shape(), " and indices shape ", indices.shape(),
                    " do not fit input shape ", x_shape);
  EMBER_CHECK_DTYPE(indices.dtype() == kInt64, op, ": expected int64 indices, got ",
                    indices.dtype());
  check_grad(op, grad_y, grad_y.shape());
  PoolShape s;
  s.n = x_shape[0], s.c = x_shape[1], s.h = x_shape[2], s.w = x_shape[3];
  s.oh = grad_y.size(2), s.ow = grad_y.size(3);
  Tensor dx = empty(x_shape, {grad_y.dtype(), dev});
  if (dx.numel() == 0) return dx;
  const Tensor gc = grad_y.contiguous(), ic = indices.contiguous();
  // Indices outside the plane: an IndexError on the cpu, ignored by the GPU gather (checking
  // them would make the host wait for the device).
  const KernelTable& k = kernels_for(dev);
  const DataPtr ws = workspace(dev, k.max_pool2d_bwd_workspace_bytes(s));
  k.max_pool2d_bwd(grad_y.dtype(), s, gc.data_ptr(), ic.data<int64_t>(), dx.data_ptr(),
                   static_cast<int64_t*>(ws.get()), stream_of(dev));
  return dx;
}

namespace {
PoolShape avg_shape(const char* op, const Shape& xs, const AvgPool2dParams& p) {
  EMBER_CHECK_VALUE(p.divisor_override >= 0, op, ": divisor_override must be positive, got ",
                    p.divisor_override);
  PoolShape s = window_shape(op, xs, p.kernel, p.stride, p.padding, {1, 1}, p.ceil_mode);
  s.count_include_pad = p.count_include_pad;
  s.divisor_override = p.divisor_override;
  return s;
}
}  // namespace

Tensor avg_pool2d(const Tensor& x, const AvgPool2dParams& p) {
  check_input("avg_pool2d", x);
  const PoolShape s = avg_shape("avg_pool2d", x.shape(), p);
  return run_avg_pool(x, s, out_shape(s), &KernelTable::avg_pool2d_fwd, false, &s);
}

Tensor avg_pool2d_backward(const Tensor& grad_y, const Shape& x_shape, const AvgPool2dParams& p) {
  const char* op = "avg_pool2d_backward";
  const PoolShape s = avg_shape(op, x_shape, p);
  check_grad(op, grad_y, out_shape(s));
  return run_avg_pool(grad_y, s, x_shape, &KernelTable::avg_pool2d_bwd, true, &s);
}

namespace {
PoolShape adaptive_shape(const char* op, const Shape& xs, std::array<int64_t, 2> out) {
  EMBER_CHECK_SHAPE(xs.size() == 4, op, ": expected a 4-D input [N, C, H, W], got shape ", xs);
  EMBER_CHECK_VALUE(out[0] >= 1 && out[1] >= 1, op, ": output size must be positive, got [", out[0],
                    ", ", out[1], "]");
  EMBER_CHECK_SHAPE(xs[2] >= 1 && xs[3] >= 1, op, ": input shape ", xs,
                    " has an empty plane; nothing to average");
  PoolShape s;
  s.n = xs[0], s.c = xs[1], s.h = xs[2], s.w = xs[3], s.oh = out[0], s.ow = out[1];
  return s;
}
}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> out) {
  check_input("adaptive_avg_pool2d", x);
  const PoolShape s = adaptive_shape("adaptive_avg_pool2d", x.shape(), out);
  const std::optional<PoolShape> a = as_average(s);
  return run_avg_pool(x, s, out_shape(s), &KernelTable::adaptive_avg_pool2d_fwd, false,
                      a ? &*a : nullptr);
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_y, const Shape& x_shape) {
  const char* op = "adaptive_avg_pool2d_backward";
  EMBER_CHECK_SHAPE(grad_y.dim() == 4, op, ": expected a 4-D grad_y, got shape ", grad_y.shape());
  const PoolShape s = adaptive_shape(op, x_shape, {grad_y.size(2), grad_y.size(3)});
  check_grad(op, grad_y, out_shape(s));
  const std::optional<PoolShape> a = as_average(s);
  return run_avg_pool(grad_y, s, x_shape, &KernelTable::adaptive_avg_pool2d_bwd, true,
                      a ? &*a : nullptr);
}

}  // namespace ember::ops

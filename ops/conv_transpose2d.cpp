// conv_transpose2d through the convolution registry: y = conv2d_backward_data(x, w) for the
// convolution whose input has y's shape.
#include "ops/conv_transpose2d.h"

#include <algorithm>

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/pad.h"

namespace ember::ops {
namespace {

// y's shape, and how many zero rows and columns x needs at its end so that the convolution of y
// has x's shape: output_padding >= stride (allowed while below the dilation) makes that
// convolution's output one step longer than x.
struct Plan {
  Shape y_shape;
  int64_t extra_h = 0, extra_w = 0;
};

Plan plan(const char* op, const Shape& xs, const Shape& ws, const ConvTranspose2dParams& p) {
  const Conv2dParams& c = p.conv;
  EMBER_CHECK_SHAPE(xs.size() == 4, op, ": expected a 4-D input [N, C, H, W], got shape ", xs);
  EMBER_CHECK_SHAPE(ws.size() == 4, op,
                    ": expected a 4-D weight [C_in, C_out/groups, R, S], got shape ", ws);
  EMBER_CHECK_VALUE(c.groups >= 1, op, ": groups must be positive, got ", c.groups);
  EMBER_CHECK_SHAPE(xs[1] == ws[0], op, ": input shape ", xs, " has ", xs[1],
                    " channels but weight shape ", ws, " expects ", ws[0]);
  EMBER_CHECK_SHAPE(ws[0] % c.groups == 0, op, ": input channels ", ws[0],
                    " are not divisible by groups=", c.groups);
  Plan r;
  r.y_shape = {xs[0], ws[1] * c.groups, 0, 0};
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK_VALUE(c.stride[i] >= 1 && c.dilation[i] >= 1 && c.padding[i] >= 0, op,
                      ": expected stride and dilation >= 1 and padding >= 0, got stride [",
                      c.stride[0], ", ", c.stride[1], "], dilation [", c.dilation[0], ", ",
                      c.dilation[1], "], padding [", c.padding[0], ", ", c.padding[1], "]");
    const int64_t op_i = p.output_padding[i];
    EMBER_CHECK_VALUE(op_i >= 0 && op_i < std::max(c.stride[i], c.dilation[i]), op,
                      ": output padding must be smaller than either stride or dilation, got "
                      "output_padding [",
                      p.output_padding[0], ", ", p.output_padding[1], "], stride [", c.stride[0],
                      ", ", c.stride[1], "], dilation [", c.dilation[0], ", ", c.dilation[1], "]");
    const int64_t out = (xs[2 + i] - 1) * c.stride[i] - 2 * c.padding[i] +
                        c.dilation[i] * (ws[2 + i] - 1) + op_i + 1;
    EMBER_CHECK_SHAPE(out >= 1, op, ": the output size would be ", out, " along dim ", 2 + i,
                      " (input shape ", xs, ", weight shape ", ws, ")");
    r.y_shape[2 + i] = out;
  }
  if (xs[2] > 0 && xs[3] > 0) {
    const Shape conv_out = conv2d_output_shape(r.y_shape, ws, c);
    r.extra_h = conv_out[2] - xs[2];
    r.extra_w = conv_out[3] - xs[3];
  }
  return r;
}

void check_operands(const char* op, std::initializer_list<const Tensor*> ts) {
  check_same_device(op, ts);
  const Tensor& first = **ts.begin();
  check_floating(op, first);
  for (const Tensor* t : ts)
    EMBER_CHECK_DTYPE(t->dtype() == first.dtype(), op, ": expected operands of one dtype, got ",
                      first.dtype(), " and ", t->dtype());
}

// x with the plan's zero rows and columns appended (x itself when none).
Tensor padded(const Tensor& x, const Plan& pl) {
  if (pl.extra_h == 0 && pl.extra_w == 0) return x;
  return pad(x, {0, pl.extra_w, 0, pl.extra_h}, PadMode::constant);
}

}  // namespace

Shape conv_transpose2d_output_shape(const Shape& xs, const Shape& ws,
                                    const ConvTranspose2dParams& p) {
  return plan("conv_transpose2d", xs, ws, p).y_shape;
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvTranspose2dParams& p) {
  const char* op = "conv_transpose2d";
  if (bias.defined())
    check_operands(op, {&x, &w, &bias});
  else
    check_operands(op, {&x, &w});
  const Plan pl = plan(op, x.shape(), w.shape(), p);
  if (bias.defined())
    EMBER_CHECK_SHAPE(bias.dim() == 1 && bias.size(0) == pl.y_shape[1], op,
                      ": expected a bias of shape [", pl.y_shape[1], "], got ", bias.shape());
  if (bias.defined() && is_half(x.dtype())) {
    // The convolution's sums and the bias in float32, rounded once (Note [Half storage]): a half
    // result plus a half bias would round twice. At the cost of float32 copies of the operands.
    const Tensor y = conv_transpose2d(x.to(kFloat32), w.to(kFloat32), bias.to(kFloat32), p);
    return y.to(x.dtype());
  }
  Tensor y = conv2d_backward_data(padded(x, pl), w, pl.y_shape, p.conv);
  if (bias.defined() && y.numel() > 0) y = add(y, bias.view({1, -1, 1, 1}));
  return y;
}

Tensor conv_transpose2d_backward_input(const Tensor& grad_y, const Tensor& w, const Shape& x_shape,
                                       const ConvTranspose2dParams& p) {
  const char* op = "conv_transpose2d_backward_input";
  check_operands(op, {&grad_y, &w});
  const Plan pl = plan(op, x_shape, w.shape(), p);
  EMBER_CHECK_SHAPE(grad_y.shape() == pl.y_shape, op, ": expected grad_y of shape ", pl.y_shape,
                    ", got ", grad_y.shape());
  if (x_shape[2] == 0 || x_shape[3] == 0) return zeros(x_shape, {w.dtype(), w.device()});
  const Tensor dx = conv2d(grad_y, w, Tensor(), p.conv);
  if (pl.extra_h == 0 && pl.extra_w == 0) return dx;
  return dx.slice(2, 0, x_shape[2]).slice(3, 0, x_shape[3]).contiguous();
}

Tensor conv_transpose2d_backward_weight(const Tensor& grad_y, const Tensor& x, const Shape& w_shape,
                                        const ConvTranspose2dParams& p) {
  const char* op = "conv_transpose2d_backward_weight";
  check_operands(op, {&grad_y, &x});
  const Plan pl = plan(op, x.shape(), w_shape, p);
  EMBER_CHECK_SHAPE(grad_y.shape() == pl.y_shape, op, ": expected grad_y of shape ", pl.y_shape,
                    ", got ", grad_y.shape());
  if (x.numel() == 0) return zeros(w_shape, {x.dtype(), x.device()});
  return conv2d_backward_filter(padded(x, pl), grad_y, w_shape, p.conv);
}

}  // namespace ember::ops

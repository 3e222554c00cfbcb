// F.pad: PyTorch's checks, the kernels' PadShape (the unpadded leading dims merged into one),
// then the device's pad kernels.
#include "ops/pad.h"

#include <algorithm>

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ember::ops {

using kernels::PadShape;

PadMode pad_mode_from_string(const char* op, const std::string& mode) {
  if (mode == "constant") return PadMode::constant;
  if (mode == "reflect") return PadMode::reflect;
  if (mode == "replicate") return PadMode::replicate;
  if (mode == "circular") return PadMode::circular;
  EMBER_THROW(ValueError, op, ": unknown padding mode '", mode,
              "', expected one of 'constant', 'reflect', 'replicate', 'circular'");
}

const char* pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::constant:
      return "constant";
    case PadMode::reflect:
      return "reflect";
    case PadMode::replicate:
      return "replicate";
    case PadMode::circular:
      return "circular";
  }
  return "?";
}

namespace {

PadShape make_shape(const Shape& xs, const std::vector<int64_t>& pad, PadMode mode, double value) {
  const char* op = "pad";
  const int64_t dims = static_cast<int64_t>(xs.size());
  const int64_t len = static_cast<int64_t>(pad.size());
  EMBER_CHECK_VALUE(len % 2 == 0, op, ": the padding length must be divisible by 2, got ", len,
                    " values");
  const int64_t pairs = len / 2;
  EMBER_CHECK_VALUE(pairs <= dims, op, ": the padding length is too large: ", len, " values pad ",
                    pairs, " dims of an input of shape ", xs);
  if (mode != PadMode::constant) {
    EMBER_CHECK_VALUE(pairs >= 1 && pairs <= 3 && (dims == pairs + 1 || dims == pairs + 2), op,
                      ": ", pad_mode_name(mode),
                      " padding pads the last 1, 2 or 3 dims of an "
                      "input with one or two more dims (2-D to 5-D), got ",
                      pairs, " pairs of pads for an input of shape ", xs);
    EMBER_CHECK_VALUE(value == 0, op, ": padding mode '", pad_mode_name(mode),
                      "' does not take a value argument, got ", value);
  }
  PadShape s;
  s.mode = mode;
  s.value = value;
  const int64_t lead = dims - pairs;
  if (lead > 0) {  // the unpadded leading dims as one
    int64_t outer = 1;
    for (int64_t d = 0; d < lead; ++d) outer *= xs[d];
    s.in[0] = s.out[0] = s.span[0] = outer;
    s.ndim = 1;
  }
  EMBER_CHECK_VALUE(s.ndim + pairs <= kernels::kMaxPadDims, op, ": at most ", kernels::kMaxPadDims,
                    " dims can be padded, got ", pairs);
  for (int64_t d = lead; d < dims; ++d) {
    const int64_t pair = dims - 1 - d;  // the last dim's pads come first
    const int64_t b = pad[2 * pair], a = pad[2 * pair + 1], n = xs[d];
    const int64_t out = n + b + a;
    EMBER_CHECK_VALUE(out >= 0, op, ": the pads (", b, ", ", a, ") make dim ", d, " of size ", n,
                      " negative (", out, ")");
    const int k = s.ndim++;
    s.in[k] = n;
    s.out[k] = out;
    s.before[k] = b;
    s.lo[k] = 0;
    s.span[k] = n;
    if (mode == PadMode::reflect)
      EMBER_CHECK_VALUE(b < n && a < n, op,
                        ": reflect padding must be less than the dim's size, "
                        "got pads (",
                        b, ", ", a, ") for dim ", d, " of size ", n, " (input shape ", xs, ")");
    if (mode == PadMode::replicate)
      EMBER_CHECK_VALUE(n > 0 || out == 0, op, ": replicate padding of an empty dim ", d,
                        " (input shape ", xs, ")");
    if (mode == PadMode::circular) {  // negative pads crop first, then the rest wraps
      s.lo[k] = std::max<int64_t>(-b, 0);
      s.span[k] = n - s.lo[k] - std::max<int64_t>(-a, 0);
      s.before[k] = std::max<int64_t>(b, 0);
      EMBER_CHECK_VALUE(
          s.span[k] >= 0 && b <= s.span[k] && a <= s.span[k] && (s.span[k] > 0 || out == 0), op,
          ": circular padding (", b, ", ", a, ") of dim ", d, " of size ", n,
          " wraps around more than once");
    }
  }
  if (s.ndim == 0) s.ndim = 1, s.in[0] = s.out[0] = s.span[0] = 1;  // a 0-D x, nothing padded
  return s;
}

Shape shape_of(const PadShape& s, const Shape& xs, const std::vector<int64_t>& pad) {
  Shape out = xs;
  const int64_t dims = static_cast<int64_t>(xs.size()),
                pairs = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t d = dims - pairs; d < dims; ++d) out[d] = s.out[s.ndim - (dims - d)];
  return out;
}

}  // namespace

Shape pad_output_shape(const Shape& xs, const std::vector<int64_t>& pad, PadMode mode) {
  return shape_of(make_shape(xs, pad, mode, 0.0), xs, pad);
}

Tensor pad(const Tensor& x_in, const std::vector<int64_t>& pad, PadMode mode, double value) {
  const Device dev = x_in.device();
  if (mode == PadMode::constant)
    check_compute_dtype("pad", x_in.dtype(), dev);
  else
    check_floating("pad", x_in);
  const PadShape s = make_shape(x_in.shape(), pad, mode, value);
  Tensor y = empty(shape_of(s, x_in.shape(), pad), {x_in.dtype(), dev});
  if (y.numel() == 0) return y;
  const Tensor x = x_in.contiguous();
  kernels_for(dev).pad_fwd(x.dtype(), s, x.data_ptr(), y.data_ptr(), stream_of(dev));
  return y;
}

Tensor pad_backward(const Tensor& grad_out, const Shape& x_shape, const std::vector<int64_t>& pad,
                    PadMode mode) {
  const char* op = "pad_backward";
  check_floating(op, grad_out);
  const PadShape s = make_shape(x_shape, pad, mode, 0.0);
  const Shape ys = shape_of(s, x_shape, pad);
  EMBER_CHECK_SHAPE(grad_out.shape() == ys, op, ": expected grad_out of shape ", ys, ", got ",
                    grad_out.shape());
  const Device dev = grad_out.device();
  Tensor dx = empty(x_shape, {grad_out.dtype(), dev});
  if (dx.numel() == 0) return dx;
  if (grad_out.numel() == 0) return dx.fill_(0.0);
  const Tensor g = grad_out.contiguous();
  kernels_for(dev).pad_bwd(g.dtype(), s, g.data_ptr(), dx.data_ptr(), stream_of(dev));
  return dx;
}

}  // namespace ember::ops

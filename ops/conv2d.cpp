// conv2d: checks, shape inference, then the registry runs the chosen algorithm on contiguous
// buffers (float16/bfloat16 too: Note [Half convolutions] in ops/conv2d_half.cpp).
#include "ops/conv2d.h"

#include "ops/conv2d_cudnn.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/cpu/conv2d_implicit_gemm.h"
#include "ops/activation.h"
#include "ops/checks.h"
#include "ops/cudnn_ops.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"

namespace ember::ops {
namespace {

void check_params(const char* op, const Conv2dParams& p) {
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK_VALUE(p.stride[i] >= 1, op, ": stride must be positive, got [", p.stride[0], ", ",
                      p.stride[1], "]");
    EMBER_CHECK_VALUE(p.dilation[i] >= 1, op, ": dilation must be positive, got [", p.dilation[0],
                      ", ", p.dilation[1], "]");
    EMBER_CHECK_VALUE(p.padding[i] >= 0, op, ": padding must be non-negative, got [", p.padding[0],
                      ", ", p.padding[1], "]");
  }
  EMBER_CHECK_VALUE(p.groups >= 1, op, ": groups must be positive, got ", p.groups);
}

Shape output_shape(const char* op, const Shape& xs, const Shape& ws, const Conv2dParams& p) {
  check_params(op, p);
  EMBER_CHECK_SHAPE(xs.size() == 4, op, ": expected a 4-D input [N, C, H, W], got shape ", xs);
  EMBER_CHECK_SHAPE(ws.size() == 4, op, ": expected a 4-D weight [K, C/groups, R, S], got shape ",
                    ws);
  const int64_t c = xs[1], k = ws[0];
  EMBER_CHECK_SHAPE(c % p.groups == 0, op, ": input channels ", c, " (input shape ", xs,
                    ") are not divisible by groups=", p.groups);
  EMBER_CHECK_SHAPE(k % p.groups == 0, op, ": output channels ", k, " (weight shape ", ws,
                    ") are not divisible by groups=", p.groups);
  EMBER_CHECK_SHAPE(ws[1] * p.groups == c, op, ": input shape ", xs, " has ", c,
                    " channels but weight shape ", ws, " with groups=", p.groups, " expects ",
                    ws[1] * p.groups);
  int64_t out[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t padded = xs[2 + i] + 2 * p.padding[i];
    const int64_t eff = p.dilation[i] * (ws[2 + i] - 1) + 1;
    EMBER_CHECK_SHAPE(ws[2 + i] >= 1 && eff <= padded, op, ": kernel size ", ws[2], "x", ws[3],
                      " (dilation ", p.dilation[0], "x", p.dilation[1],
                      ") is larger than the padded input ", xs[2] + 2 * p.padding[0], "x",
                      xs[3] + 2 * p.padding[1], " (input shape ", xs, ", weight shape ", ws, ")");
    out[i] = (padded - eff) / p.stride[i] + 1;
  }
  return Shape{xs[0], k, out[0], out[1]};
}

void check_float(const char* op, const Tensor& a, const char* an, const Tensor& b, const char* bn) {
  EMBER_CHECK_DTYPE(a.dtype() == b.dtype(), op, ": ", an, " and ", bn,
                    " must have the same dtype, got ", a.dtype(), " and ", b.dtype(),
                    " (convert one with .to())");
  EMBER_CHECK_DTYPE(is_floating(a.dtype()), op,
                    ": expected floating tensors (float32, float64, float16 or bfloat16), got ",
                    a.dtype());
}

}  // namespace

Shape conv2d_output_shape(const Shape& x_shape, const Shape& w_shape, const Conv2dParams& p) {
  return output_shape("conv2d", x_shape, w_shape, p);
}

ConvKey conv2d_key(ConvDirection direction, const Shape& xs, const Shape& ws, DType dtype,
                   Device device, const Conv2dParams& p) {
  ConvKey k;
  std::memset(static_cast<void*>(&k), 0, sizeof k);  // Note [ConvKey bytes]
  k.device_type = device.type;
  k.device_index = static_cast<int16_t>(device.is_cpu() ? 0 : device.index);
  k.dtype = dtype;
  k.math = conv_math_mode(dtype, device);
  k.layout = ConvLayout::nchw;
  k.direction = direction;
  k.deterministic = conv_deterministic() ? 1 : 0;
  kernels::ConvShape& s = k.shape;
  s.n = xs[0], s.c = xs[1], s.h = xs[2], s.w = xs[3];
  s.k = ws[0], s.r = ws[2], s.s = ws[3];
  s.stride_h = p.stride[0], s.stride_w = p.stride[1];
  s.pad_h = p.padding[0], s.pad_w = p.padding[1];
  s.dil_h = p.dilation[0], s.dil_w = p.dilation[1];
  s.groups = p.groups;
  const Shape ys = output_shape("conv2d", xs, ws, p);
  s.oh = ys[2], s.ow = ys[3];
  return k;
}

ConvMathMode conv_math_mode(DType dtype, Device device) {
  if (is_half(dtype) && device.is_gpu_like()) return ConvMathMode::tensor_op;
  // TF32 only where asked for, and only where it exists (float32 on a GPU).
  return dtype == DType::f32 && device.is_cuda() && conv_allow_tf32() ? ConvMathMode::tf32
                                                                      : ConvMathMode::fp32;
}

namespace {

// Note [Clamped convolutions]
// An activation after a convolution is a pass over y: at MobileNet's sizes, 12 MB read and
// written again after the convolution wrote it. ReLU and ReLU6 are clamps, so a kernel can apply
// them to y's values in the registers, before it stores them: the cpu's implicit GEMM micro-
// kernels and the direct depthwise kernel do (ConvAlgo::run_forward_clamped); the direct kernel's
// other shapes clamp each output plane right after writing it, while it is in cache. Elsewhere
// (im2col_gemm, Winograd, the GPUs) run_conv_forward clamps y in place after the algorithm.
// Either way each element is clamped once, from its final value, so the result is exactly
// clamp(conv2d(...)).
// A residual block's sum (ResNet's relu(conv(x) + shortcut)) is two more passes, the add and
// the clamp. The cpu's implicit GEMM adds the shortcut to each image (or, where threads share an
// image, each block) it has just computed, while it is in cache, then clamps it; elsewhere
// run_conv_forward adds it and clamps after the algorithm. The sum is (conv + bias) + residual,
// rounded as the separate add rounds it, so the result is exactly clamp(conv2d(...) + residual).

// The checks of conv2d_then; returns y's shape.
Shape checked_output_shape(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias,
                           const Conv2dParams& p, const Tensor& residual,
                           const PackedConv2dFilters* packed) {
  if (packed != nullptr)
    EMBER_CHECK_VALUE(packed->w_shape == w.shape() && packed->groups == p.groups, op,
                      ": the packed filters are of shape ", packed->w_shape, " in ", packed->groups,
                      " groups, the weight of shape ", w.shape(), " in ", p.groups);
  if (bias.defined())
    check_same_device(op, {&x, &w, &bias});
  else
    check_same_device(op, {&x, &w});
  check_float(op, x, "input", w, "weight");
  if (bias.defined()) check_float(op, x, "input", bias, "bias");
  const Shape ys = output_shape(op, x.shape(), w.shape(), p);
  if (bias.defined())
    EMBER_CHECK_SHAPE(bias.dim() == 1 && bias.size(0) == w.size(0), op,
                      ": expected a bias of shape [", w.size(0), "] for weight shape ", w.shape(),
                      ", got ", bias.shape());
  if (residual.defined()) {
    check_same_device(op, {&x, &residual});
    check_float(op, x, "input", residual, "residual");
    EMBER_CHECK_SHAPE(residual.shape() == ys, op, ": expected a residual of the output's shape ",
                      ys, ", got ", residual.shape());
  }
  return ys;
}

// The packed filters that serve `key` on the cpu and their layout's name (undefined where none):
// the filters in lanes where this image takes them (and the micro-kernels are still those packed
// for: otherwise the kernel packs w itself).
std::pair<Tensor, std::string> packed_for(const PackedConv2dFilters* packed, const ConvKey& key) {
  if (packed == nullptr || !packed->data.defined() || key.device_type != DeviceType::CPU) return {};
  const bool lanes =
      packed->lanes_data.defined() && kernels::cpu::conv2d_implicit_gemm_isa() != nullptr &&
      packed->lanes_isa == kernels::cpu::conv2d_implicit_gemm_packed_layout(key.shape);
  return lanes ? std::make_pair(packed->lanes_data, packed->lanes_isa)
               : std::make_pair(packed->data, packed->isa);
}

// conv2d, clamped when `clamp` is given (ReLU in one cuDNN graph where cuDNN serves; on the cpu
// inside the kernels that can, Note [Clamped convolutions]), `residual` (y's shape, dtype and
// device, or undefined) added before the clamp.
Tensor conv2d_then(const char* op, const Tensor& x, const Tensor& w, const Tensor& bias,
                   const Conv2dParams& p, const ConvClamp* clamp, const Tensor& residual = Tensor(),
                   const PackedConv2dFilters* packed = nullptr) {
  const Shape ys = checked_output_shape(op, x, w, bias, p, residual, packed);
  Tensor y = empty(ys, {x.dtype(), x.device()});
  if (y.numel() == 0) return y;
  const Tensor xc = x.contiguous(), wc = w.contiguous();
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  const Tensor zc = residual.defined() ? residual.contiguous() : Tensor();
  // y is new: the residual added and y clamped in place.
  auto finished = [&](const Tensor& t) {
    if (zc.defined()) ops::add_(t, zc);
    return clamp && clamp->bounded() ? ops::clamp_(t, clamp->lo, clamp->hi) : t;
  };
  if (x.size(1) == 0) {
    y.fill_(0.0);
    if (bias.defined()) y.copy_(bias.view({1, -1, 1, 1}));
    return finished(y);
  }
  // Half keys too (Note [Half convolutions] in ops/conv2d_half.cpp): a clamp after the one
  // rounding is the rounding of the clamp, as it keeps signs, zero and the bounds' order.
  const ConvKey key =
      conv2d_key(ConvDirection::forward, x.shape(), w.shape(), x.dtype(), x.device(), p);
  // One cuDNN graph where cuDNN serves: relu(conv + bias), and a half key's conv + bias, which
  // must round once (Note [Half bias in one rounding] in ops/conv2d_cudnn.cpp); the residual and
  // any other clamp then follow.
  const bool relu = clamp != nullptr && clamp->lo == 0.0 && std::isinf(clamp->hi) && clamp->hi > 0;
  const bool fuse_relu = relu && !zc.defined();
  if (bc.defined() && (fuse_relu || is_half(x.dtype())) &&
      cudnn_conv2d_fused(key, xc.data_ptr(), wc.data_ptr(), bc.data_ptr(), y.data_ptr(), fuse_relu))
    return fuse_relu ? y : finished(y);
  const void* b = bc.defined() ? bc.data_ptr() : nullptr;
  if (is_half(x.dtype())) {  // the half paths write y through a float32 buffer of their own
    run_conv_forward(key, xc.data_ptr(), wc.data_ptr(), b, y.data_ptr());
    return finished(y);
  }
  if (clamp == nullptr) {
    run_conv_forward(key, xc.data_ptr(), wc.data_ptr(), b, y.data_ptr());
    return y;
  }
  ConvClamp c = *clamp;
  const auto [filters, layout] = packed_for(packed, key);
  if (filters.defined()) {
    c.packed_filters = static_cast<const float*>(filters.data_ptr());
    c.packed_isa = layout.c_str();
  }
  c.residual = zc.defined() ? zc.data_ptr() : nullptr;
  run_conv_forward(key, xc.data_ptr(), wc.data_ptr(), b, y.data_ptr(), &c);
  return y;
}

void check_bounds(const char* op, double lo, double hi) {
  EMBER_CHECK_VALUE(!std::isnan(lo) && !std::isnan(hi) && lo <= hi, op,
                    ": expected bounds lo <= hi, not NaN, got [", lo, ", ", hi, "]");
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p) {
  return conv2d_then("conv2d", x, w, bias, p, nullptr);
}

Tensor conv2d_bias_relu(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                        const PackedConv2dFilters* packed) {
  const ConvClamp relu{0.0, std::numeric_limits<double>::infinity()};
  return conv2d_then("conv2d_bias_relu", x, w, bias, p, &relu, Tensor(), packed);
}

Tensor conv2d_bias_clamp(const Tensor& x, const Tensor& w, const Tensor& bias,
                         const Conv2dParams& p, double lo, double hi,
                         const PackedConv2dFilters* packed) {
  check_bounds("conv2d_bias_clamp", lo, hi);
  const ConvClamp clamp{lo, hi};
  return conv2d_then("conv2d_bias_clamp", x, w, bias, p, &clamp, Tensor(), packed);
}

Tensor conv2d_bias_add_clamp(const Tensor& x, const Tensor& w, const Tensor& bias,
                             const Tensor& residual, const Conv2dParams& p, double lo, double hi,
                             const PackedConv2dFilters* packed) {
  const char* op = "conv2d_bias_add_clamp";
  check_bounds(op, lo, hi);
  EMBER_CHECK_VALUE(residual.defined(), op, ": expected a residual tensor, got an undefined one");
  const ConvClamp clamp{lo, hi};
  return conv2d_then(op, x, w, bias, p, &clamp, residual, packed);
}

// Note [Prepared convolutions]
// An inference graph runs each Conv on inputs of one shape, call after call, and at batch 1 a
// small layer's kernels take a few microseconds. A call's own work (the checks, the output shape,
// the registry's key, its lookup and the policy's settings) then counts: about a tenth of the
// ResNet-style model's time on two threads. prepare_conv2d does that work once for one input
// shape; run_prepared_conv2d checks only what may differ from call to call (x's shape, dtype,
// device and layout; the filters and bias being the tensors prepared, which it holds so that
// their memory is not another tensor's; the residual's shape) and whether the registry would
// still choose as it did (conv_choice_current: no ranking made or cleared since, the same forced
// algorithm and policy), then runs the ranking it holds, moving along it where an algorithm
// fails as run_conv_forward does. The result is conv2d_bias_add_clamp's, bit for bit: the same
// algorithm on the same buffers. Only on the cpu, in float32 and float64: on cuda the fused
// cuDNN graph is chosen call by call, and the half forms round through float32 buffers.
struct PreparedConv2d {
  Shape x_shape, y_shape;
  DType dtype;
  Tensor w, bias;  // those prepared for (bias undefined for none)
  bool residual;
  ConvKey key;
  ConvChoice choice;
  double lo, hi;
  Tensor packed_filters;  // undefined where none serve
  std::string packed_layout;
};

std::shared_ptr<const PreparedConv2d> prepare_conv2d(const Tensor& x, const Tensor& w,
                                                     const Tensor& bias, const Tensor& residual,
                                                     const Conv2dParams& p, double lo, double hi,
                                                     const PackedConv2dFilters* packed) {
  const char* op = "prepare_conv2d";
  check_bounds(op, lo, hi);
  const Shape ys = checked_output_shape(op, x, w, bias, p, residual, packed);
  if (!x.device().is_cpu() || is_half(x.dtype()) || x.numel() == 0 || checked_numel(ys) == 0)
    return nullptr;
  auto prepared = std::make_shared<PreparedConv2d>();
  PreparedConv2d& r = *prepared;
  r.x_shape = x.shape();
  r.y_shape = ys;
  r.dtype = x.dtype();
  r.w = w.contiguous();
  r.bias = bias.defined() ? bias.contiguous() : Tensor();
  r.residual = residual.defined();
  r.key = conv2d_key(ConvDirection::forward, x.shape(), w.shape(), x.dtype(), x.device(), p);
  r.choice = conv_forward_choice(r.key);
  r.lo = lo;
  r.hi = hi;
  std::tie(r.packed_filters, r.packed_layout) = packed_for(packed, r.key);
  return prepared;
}

Tensor run_prepared_conv2d(const PreparedConv2d& p, const Tensor& x, const Tensor& w,
                           const Tensor& bias, const Tensor& residual) {
  // The very tensor prepared: its memory (held) in the same shape and layout.
  auto same = [](const Tensor& a, const Tensor& b) {
    return a.defined() == b.defined() &&
           (!a.defined() || (a.data_ptr() == b.data_ptr() && a.shape() == b.shape() &&
                             a.dtype() == b.dtype() && a.is_contiguous()));
  };
  if (x.shape() != p.x_shape || x.dtype() != p.dtype || !x.device().is_cpu() ||
      !x.is_contiguous() || !same(w, p.w) || !same(bias, p.bias) ||
      residual.defined() != p.residual)
    return Tensor();
  if (residual.defined() && (residual.shape() != p.y_shape || residual.dtype() != p.dtype ||
                             !residual.device().is_cpu() || !residual.is_contiguous()))
    return Tensor();
  if (!conv_choice_current(p.choice, p.key)) return Tensor();
  Tensor y = empty(p.y_shape, {p.dtype, kCPU});
  ConvClamp c{p.lo, p.hi};
  c.residual = residual.defined() ? residual.data_ptr() : nullptr;
  if (p.packed_filters.defined()) {
    c.packed_filters = static_cast<const float*>(p.packed_filters.data_ptr());
    c.packed_isa = p.packed_layout.c_str();
  }
  run_conv_forward_chosen(p.choice, p.key, x.data_ptr(), w.data_ptr(),
                          bias.defined() ? bias.data_ptr() : nullptr, y.data_ptr(), &c);
  return y;
}

PackedConv2dFilters pack_conv2d_filters(const Tensor& w, const Conv2dParams& p) {
  const char* op = "pack_conv2d_filters";
  check_params(op, p);
  EMBER_CHECK_SHAPE(w.dim() == 4 && w.size(0) > 0 && w.size(0) % p.groups == 0, op,
                    ": expected a 4-D weight whose filter count divides into ", p.groups,
                    " groups, got ", w.shape());
  PackedConv2dFilters out;
  out.w_shape = w.shape();
  out.groups = p.groups;
  const char* isa = kernels::cpu::conv2d_implicit_gemm_isa();
  if (!w.device().is_cpu() || w.dtype() != kFloat32 || isa == nullptr) return out;
  // The filters' geometry, and the stride, padding and dilation: what the packing reads (the
  // layout depends on them, Note [Filters in lanes] in kernels/cpu/conv2d_implicit_gemm_lanes.cpp).
  kernels::ConvShape s;
  s.n = 1;
  s.k = w.size(0);
  s.c = w.size(1) * p.groups;
  s.r = w.size(2);
  s.s = w.size(3);
  s.groups = p.groups;
  s.stride_h = p.stride[0], s.stride_w = p.stride[1];
  s.pad_h = p.padding[0], s.pad_w = p.padding[1];
  s.dil_h = p.dilation[0], s.dil_w = p.dilation[1];
  const Tensor wc = w.contiguous();
  out.data = empty({kernels::cpu::conv2d_implicit_gemm_packed_filter_elems(s)}, {kFloat32, kCPU});
  kernels::cpu::conv2d_implicit_gemm_pack_filters(s, wc.data_ptr(),
                                                  static_cast<float*>(out.data.data_ptr()));
  out.isa = kernels::cpu::conv2d_implicit_gemm_packed_layout(s);
  if (s.stride_h == 1 && s.stride_w == 1) {
    // Packed above for an image of size 0, which takes the copy layouts; a 7 x 7 output takes no
    // copy layout, so the filters in lanes wherever they may serve the layer.
    s.oh = s.ow = 7;
    s.h = s.oh + s.dil_h * (s.r - 1) - 2 * s.pad_h;
    s.w = s.ow + s.dil_w * (s.s - 1) - 2 * s.pad_w;
    const std::string lanes = kernels::cpu::conv2d_implicit_gemm_packed_layout(s);
    if (lanes != out.isa) {
      out.lanes_data =
          empty({kernels::cpu::conv2d_implicit_gemm_packed_filter_elems(s)}, {kFloat32, kCPU});
      kernels::cpu::conv2d_implicit_gemm_pack_filters(
          s, wc.data_ptr(), static_cast<float*>(out.lanes_data.data_ptr()));
      out.lanes_isa = lanes;
    }
  }
  return out;
}

Tensor conv2d_backward_data(const Tensor& grad_y, const Tensor& w, const Shape& x_shape,
                            const Conv2dParams& p) {
  const char* op = "conv2d_backward_data";
  check_same_device(op, {&grad_y, &w});
  check_float(op, grad_y, "grad_y", w, "weight");
  const Shape ys = output_shape(op, x_shape, w.shape(), p);
  EMBER_CHECK_SHAPE(grad_y.shape() == ys, op, ": expected grad_y of shape ", ys,
                    " for input shape ", x_shape, " and weight shape ", w.shape(), ", got ",
                    grad_y.shape());
  Tensor dx = empty(x_shape, {w.dtype(), w.device()});
  if (dx.numel() == 0) return dx;
  if (grad_y.numel() == 0) return dx.zero_();
  const Tensor gc = grad_y.contiguous(), wc = w.contiguous();
  const ConvKey key =
      conv2d_key(ConvDirection::backward_data, x_shape, w.shape(), w.dtype(), w.device(), p);
  run_conv_backward_data(key, gc.data_ptr(), wc.data_ptr(), dx.data_ptr());
  return dx;
}

Tensor conv2d_backward_filter(const Tensor& grad_y, const Tensor& x, const Shape& w_shape,
                              const Conv2dParams& p) {
  const char* op = "conv2d_backward_filter";
  check_same_device(op, {&grad_y, &x});
  check_float(op, grad_y, "grad_y", x, "input");
  const Shape ys = output_shape(op, x.shape(), w_shape, p);
  EMBER_CHECK_SHAPE(grad_y.shape() == ys, op, ": expected grad_y of shape ", ys,
                    " for input shape ", x.shape(), " and weight shape ", w_shape, ", got ",
                    grad_y.shape());
  Tensor dw = empty(w_shape, {x.dtype(), x.device()});
  if (dw.numel() == 0 || grad_y.numel() == 0) return dw.zero_();
  const Tensor gc = grad_y.contiguous(), xc = x.contiguous();
  const ConvKey key =
      conv2d_key(ConvDirection::backward_filter, x.shape(), w_shape, x.dtype(), x.device(), p);
  run_conv_backward_filter(key, gc.data_ptr(), xc.data_ptr(), dw.data_ptr());
  return dw;
}

}  // namespace ember::ops

#include "autograd/conv2d.h"

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "autograd/pad.h"
#include "autograd/shape.h"
#include "ops/reduce.h"

namespace ember {

namespace {

ConvPadding padding_kind_of(const char* op, const std::string& mode) {
  if (mode == "same") return ConvPadding::same;
  if (mode == "valid") return ConvPadding::valid;
  EMBER_THROW(ValueError, op, ": invalid padding string '", mode,
              "', should be one of 'valid', 'same'");
}

}  // namespace

Conv2dOptions& Conv2dOptions::padding(const std::string& mode) {
  padding_kind = padding_kind_of("conv2d", mode);
  params.padding = {0, 0};
  return *this;
}

std::array<int64_t, 4> conv2d_input_pads(const Conv2dOptions& o, int64_t kh, int64_t kw) {
  const ops::Conv2dParams& p = o.params;
  if (o.padding_kind == ConvPadding::valid) return {0, 0, 0, 0};
  if (o.padding_kind == ConvPadding::explicit_values)
    return {p.padding[1], p.padding[1], p.padding[0], p.padding[0]};
  EMBER_CHECK_VALUE(p.stride[0] == 1 && p.stride[1] == 1, "conv2d: padding='same' is not ",
                    "supported for strided convolutions, got stride [", p.stride[0], ", ",
                    p.stride[1], "]");
  const int64_t th = p.dilation[0] * (kh - 1), tw = p.dilation[1] * (kw - 1);
  return {tw / 2, tw - tw / 2, th / 2, th - th / 2};
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dOptions& options) {
  if (autocast_applies({&x, &w, &b}))
    return autocast_call("conv2d", {x, w, b},
                         [&](const auto& c) { return conv2d(c[0], c[1], c[2], options); });
  if (options.padding_kind != ConvPadding::explicit_values && w.dim() == 4) {
    // PyTorch's rule: the symmetric part as the convolution's padding; an odd total's extra
    // row and column as zeros appended to the input.
    const std::array<int64_t, 4> pads = conv2d_input_pads(options, w.size(2), w.size(3));
    Conv2dOptions sym = options;
    sym.padding(pads[2], pads[0]);
    if (pads[1] == pads[0] && pads[3] == pads[2]) return conv2d(x, w, b, sym);
    return conv2d(pad(x, {0, pads[1] - pads[0], 0, pads[3] - pads[2]}), w, b, sym);
  }
  const ops::Conv2dParams p = options.params;
  Tensor y = ops::conv2d(x, w, b, p);
  const bool need_x = x.requires_grad(), need_w = w.requires_grad();
  const Shape xs = x.shape(), ws = w.shape();
  std::vector<Tensor> inputs{x, w};
  if (b.defined()) inputs.push_back(b);
  // Save only what the needed gradients read: w for dx, x for dw.
  std::vector<Tensor> saved{need_w ? x : Tensor(), need_x ? w : Tensor()};
  const bool has_bias = b.defined();
  return record(
      "Conv2dBackward", y, inputs, std::move(saved),
      [p, need_x, need_w, has_bias, xs, ws](const Tensor& g, const std::vector<Tensor>& s) {
        std::vector<Tensor> grads(has_bias ? 3 : 2);
        if (need_x) grads[0] = ops::conv2d_backward_data(g, s[1], xs, p);
        if (need_w) grads[1] = ops::conv2d_backward_filter(g, s[0], ws, p);
        if (has_bias) grads[2] = ops::sum(g, {0, 2, 3});
        return grads;
      });
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  return conv2d(x, w, b,
                Conv2dOptions().stride(stride).padding(padding).dilation(dilation).groups(groups));
}

Conv1dOptions& Conv1dOptions::padding(const std::string& mode) {
  padding_kind = padding_kind_of("conv1d", mode);
  padding_ = 0;
  return *this;
}

Conv2dOptions Conv1dOptions::as_2d() const {
  Conv2dOptions o;
  o.stride(1, stride_).padding(0, padding_).dilation(1, dilation_).groups(groups_);
  o.padding_kind = padding_kind;
  return o;
}

Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv1dOptions& options) {
  EMBER_CHECK_SHAPE(x.dim() == 3, "conv1d: expected a 3-D input [N, C, L], got shape ", x.shape());
  EMBER_CHECK_SHAPE(w.dim() == 3, "conv1d: expected a 3-D weight [K, C/groups, k], got shape ",
                    w.shape());
  return squeeze(conv2d(unsqueeze(x, 2), unsqueeze(w, 2), b, options.as_2d()), 2);
}

}  // namespace ember

#include "nn/conv.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "autograd/activation.h"
#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "autograd/pad.h"
#include "nn/init.h"
#include "ops/conv2d.h"

namespace ember::nn {

namespace {

// PyTorch's four padding modes of a convolution layer; ValueError naming the mode otherwise.
void check_padding_mode(const char* layer, const std::string& mode) {
  EMBER_CHECK_VALUE(mode == "zeros" || mode == "reflect" || mode == "replicate" ||
                        mode == "circular",
                    layer, ": padding_mode must be one of 'zeros', 'reflect', 'replicate', "
                    "'circular', got '", mode, "'");
}

void check_sizes(const char* layer, int64_t in, int64_t out, int64_t g,
                 std::initializer_list<int64_t> kernel) {
  bool ok = in > 0 && out > 0;
  for (int64_t k : kernel) ok = ok && k > 0;
  EMBER_CHECK_VALUE(ok, layer, ": channels and kernel sizes must be positive, got in=", in,
                    " out=", out);
  EMBER_CHECK_VALUE(g > 0 && in % g == 0 && out % g == 0, layer, ": groups=", g,
                    " must divide in_channels=", in, " and out_channels=", out);
}

// A weight of `shape` initialised as PyTorch's layers do, and a bias bounded by 1/sqrt(fan_in).
std::pair<Tensor, Tensor> init_params(const Shape& shape, int64_t out, bool with_bias) {
  Tensor w = empty(shape);
  init::kaiming_uniform_(w, std::sqrt(5.0));
  if (!with_bias) return {w, Tensor()};
  Tensor b = empty({out});
  const double bound = 1.0 / std::sqrt(static_cast<double>(init::fans(w).first));
  init::uniform_(b, -bound, bound);
  return {w, b};
}

std::string tuple(std::initializer_list<int64_t> v) {
  std::string s = "(";
  for (int64_t x : v) s += (s.size() > 1 ? ", " : "") + std::to_string(x);
  return s + (v.size() == 1 ? ",)" : ")");
}

// PyTorch's ConvNd.extra_repr: what differs from the defaults.
std::string conv_repr(int64_t in, int64_t out, const std::string& kernel, const std::string& stride,
                      const std::string& padding, bool default_padding, const std::string& dilation,
                      bool default_dilation, const std::string& output_padding, int64_t groups,
                      bool bias, const std::string& padding_mode) {
  std::string s = std::to_string(in) + ", " + std::to_string(out) + ", kernel_size=" + kernel +
                  ", stride=" + stride;
  if (!default_padding) s += ", padding=" + padding;
  if (!default_dilation) s += ", dilation=" + dilation;
  if (!output_padding.empty()) s += ", output_padding=" + output_padding;
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  if (!bias) s += ", bias=False";
  if (padding_mode != "zeros") s += ", padding_mode=" + padding_mode;
  return s;
}

std::string padding_repr(ConvPadding kind, std::initializer_list<int64_t> values) {
  if (kind == ConvPadding::same) return "same";
  if (kind == ConvPadding::valid) return "valid";
  return tuple(values);
}

}  // namespace

Conv2d::Conv2d(int64_t in, int64_t out, int64_t k, Conv2dOptions opts, bool with_bias)
    : Conv2d(in, out, std::array<int64_t, 2>{k, k}, opts, with_bias) {}

Conv2d::Conv2d(int64_t in, int64_t out, std::array<int64_t, 2> k, Conv2dOptions opts,
               bool with_bias, const std::string& mode)
    : in_channels(in), out_channels(out), kernel_size(k), options(opts), padding_mode(mode) {
  const int64_t g = opts.params.groups;
  check_sizes("Conv2d", in, out, g, {k[0], k[1]});
  check_padding_mode("Conv2d", mode);
  conv2d_input_pads(opts, k[0], k[1]);  // padding "same" with a stride: the error now
  auto [w, b] = init_params({out, in / g, k[0], k[1]}, out, with_bias);
  weight = register_parameter("weight", w);
  if (with_bias) bias = register_parameter("bias", b);
}

Tensor Conv2d::forward(const Tensor& x) {
  EMBER_CHECK_SHAPE(x.dim() == 4 && x.shape()[1] == in_channels, "Conv2d(", in_channels, ", ",
                    out_channels, "): expected input of shape [N, ", in_channels,
                    ", H, W], got ", x.shape());
  Tensor in = x;
  Conv2dOptions o = options;
  if (padding_mode != "zeros") {
    const std::array<int64_t, 4> p = conv2d_input_pads(options, kernel_size[0], kernel_size[1]);
    in = pad(x, {p[0], p[1], p[2], p[3]}, padding_mode);
    o.padding(0, 0);
  }
  if (!fused_relu) return conv2d(in, weight, bias, o);
  // The fused op is autograd-free, outside autocast's table, and pads only symmetrically.
  if (GradMode::is_enabled() || autocast_applies({&in, &weight, &bias}) ||
      o.padding_kind != ConvPadding::explicit_values)
    return relu(conv2d(in, weight, bias, o));
  return ops::conv2d_bias_relu(in, weight, bias, o.params);
}

void Conv2d::set_bias(const Tensor& b) {
  if (!b.defined()) {
    if (bias.defined()) unregister_parameter("bias");
    bias = Tensor();
    return;
  }
  EMBER_CHECK_SHAPE(b.dim() == 1 && b.size(0) == out_channels, "Conv2d(", in_channels, ", ",
                    out_channels, "): expected a bias of shape [", out_channels, "], got ",
                    b.shape());
  if (!bias.defined()) {
    bias = register_parameter("bias", b.to(weight.device(), weight.dtype()).clone());
    return;
  }
  NoGradGuard no_grad;
  bias.copy_(b);
}

std::string Conv2d::extra_repr() const {
  const auto& p = options.params;
  return conv_repr(in_channels, out_channels, tuple({kernel_size[0], kernel_size[1]}),
                   tuple({p.stride[0], p.stride[1]}),
                   padding_repr(options.padding_kind, {p.padding[0], p.padding[1]}),
                   options.padding_kind == ConvPadding::explicit_values && !p.padding[0] &&
                       !p.padding[1],
                   tuple({p.dilation[0], p.dilation[1]}), p.dilation[0] == 1 && p.dilation[1] == 1,
                   "", p.groups, bias.defined(), padding_mode);
}

Conv1d::Conv1d(int64_t in, int64_t out, int64_t k, Conv1dOptions opts, bool with_bias,
               const std::string& mode)
    : in_channels(in), out_channels(out), kernel_size(k), options(opts), padding_mode(mode) {
  check_sizes("Conv1d", in, out, opts.groups_, {k});
  check_padding_mode("Conv1d", mode);
  conv2d_input_pads(opts.as_2d(), 1, k);
  auto [w, b] = init_params({out, in / opts.groups_, k}, out, with_bias);
  weight = register_parameter("weight", w);
  if (with_bias) bias = register_parameter("bias", b);
}

Tensor Conv1d::forward(const Tensor& x) {
  EMBER_CHECK_SHAPE(x.dim() == 3 && x.size(1) == in_channels, "Conv1d(", in_channels, ", ",
                    out_channels, "): expected input of shape [N, ", in_channels, ", L], got ",
                    x.shape());
  if (padding_mode == "zeros") return conv1d(x, weight, bias, options);
  const std::array<int64_t, 4> p = conv2d_input_pads(options.as_2d(), 1, kernel_size);
  Conv1dOptions o = options;
  o.padding(0);
  return conv1d(pad(x, {p[0], p[1]}, padding_mode), weight, bias, o);
}

std::string Conv1d::extra_repr() const {
  const Conv1dOptions& o = options;
  return conv_repr(in_channels, out_channels, tuple({kernel_size}), tuple({o.stride_}),
                   padding_repr(o.padding_kind, {o.padding_}),
                   o.padding_kind == ConvPadding::explicit_values && o.padding_ == 0,
                   tuple({o.dilation_}), o.dilation_ == 1, "", o.groups_, bias.defined(),
                   padding_mode);
}

ConvTranspose2d::ConvTranspose2d(int64_t in, int64_t out, std::array<int64_t, 2> k,
                                 ConvTranspose2dOptions opts, bool with_bias,
                                 const std::string& mode)
    : in_channels(in), out_channels(out), kernel_size(k), options(opts) {
  const int64_t g = opts.params.conv.groups;
  check_sizes("ConvTranspose2d", in, out, g, {k[0], k[1]});
  EMBER_CHECK_VALUE(mode == "zeros", "ConvTranspose2d: only 'zeros' padding_mode is supported, ",
                    "got '", mode, "'");
  const auto& c = opts.params.conv;
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK_VALUE(c.stride[i] >= 1 && c.dilation[i] >= 1 && c.padding[i] >= 0,
                      "ConvTranspose2d: expected stride and dilation >= 1 and padding >= 0");
    const int64_t op = opts.params.output_padding[i];
    EMBER_CHECK_VALUE(op >= 0 && op < std::max(c.stride[i], c.dilation[i]),
                      "ConvTranspose2d: output padding must be smaller than either stride or "
                      "dilation, got output_padding ", op, ", stride ", c.stride[i], ", dilation ",
                      c.dilation[i]);
  }
  auto [w, b] = init_params({in, out / g, k[0], k[1]}, out, with_bias);
  weight = register_parameter("weight", w);
  if (with_bias) bias = register_parameter("bias", b);
}

Tensor ConvTranspose2d::forward(const Tensor& x) {
  EMBER_CHECK_SHAPE(x.dim() == 4 && x.size(1) == in_channels, "ConvTranspose2d(", in_channels,
                    ", ", out_channels, "): expected input of shape [N, ", in_channels,
                    ", H, W], got ", x.shape());
  return conv_transpose2d(x, weight, bias, options);
}

Tensor ConvTranspose2d::forward(const Tensor& x, const std::vector<int64_t>& output_size) {
  const char* op = "ConvTranspose2d";
  EMBER_CHECK_SHAPE(x.dim() == 4, op, ": expected a 4-D input, got ", x.shape());
  std::vector<int64_t> size = output_size;
  if (size.size() == 4) size.erase(size.begin(), size.begin() + 2);  // [N, C, H, W] given
  EMBER_CHECK_VALUE(size.size() == 2, op, ": output_size must have 2 or 4 elements, got ",
                    output_size.size());
  const ops::Conv2dParams& c = options.params.conv;
  ConvTranspose2dOptions o = options;
  for (int i = 0; i < 2; ++i) {
    const int64_t min_size = (x.size(2 + i) - 1) * c.stride[i] - 2 * c.padding[i] +
                             c.dilation[i] * (kernel_size[i] - 1) + 1;
    const int64_t max_size = min_size + c.stride[i] - 1;
    EMBER_CHECK_VALUE(size[i] >= min_size && size[i] <= max_size, op, ": requested an output size ",
                      "of ", size[i], " along dim ", 2 + i, ", but valid sizes range from ",
                      min_size, " to ", max_size, " (for an input of shape ", x.shape(), ")");
    o.params.output_padding[i] = size[i] - min_size;
  }
  return conv_transpose2d(x, weight, bias, o);
}

std::string ConvTranspose2d::extra_repr() const {
  const auto& p = options.params;
  const auto& c = p.conv;
  const bool op_default = p.output_padding[0] == 0 && p.output_padding[1] == 0;
  return conv_repr(in_channels, out_channels, tuple({kernel_size[0], kernel_size[1]}),
                   tuple({c.stride[0], c.stride[1]}), tuple({c.padding[0], c.padding[1]}),
                   c.padding[0] == 0 && c.padding[1] == 0, tuple({c.dilation[0], c.dilation[1]}),
                   c.dilation[0] == 1 && c.dilation[1] == 1,
                   op_default ? "" : tuple({p.output_padding[0], p.output_padding[1]}), c.groups,
                   bias.defined(), "zeros");
}

MaxPool2d::MaxPool2d(int64_t k, int64_t s, int64_t p, int64_t d, bool ceil)
    : kernel_(k), stride_(s == 0 ? k : s), padding_(p), dilation_(d), ceil_mode_(ceil) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  return max_pool2d(x, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + std::to_string(kernel_) + ", stride=" + std::to_string(stride_) +
         ", padding=" + std::to_string(padding_) + ", dilation=" + std::to_string(dilation_) +
         ", ceil_mode=" + (ceil_mode_ ? "True" : "False");
}

AvgPool2d::AvgPool2d(int64_t k, int64_t s, int64_t p, bool ceil, bool include_pad)
    : kernel_(k), stride_(s == 0 ? k : s), padding_(p), ceil_mode_(ceil), count_include_pad_(include_pad) {}

Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + std::to_string(kernel_) + ", stride=" + std::to_string(stride_) +
         ", padding=" + std::to_string(padding_);
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return "output_size=(" + std::to_string(output_size_[0]) + ", " + std::to_string(output_size_[1]) + ")";
}

}  // namespace ember::nn

#include "nn/conv.h"

#include <cmath>

#include "autograd/activation.h"
#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "nn/init.h"
#include "ops/conv2d.h"

namespace ember::nn {

Conv2d::Conv2d(int64_t in, int64_t out, int64_t k, Conv2dOptions opts, bool with_bias)
    : in_channels(in), out_channels(out), kernel_size(k), options(opts) {
  const int64_t g = opts.params.groups;
  EMBER_CHECK_VALUE(in > 0 && out > 0 && k > 0, "Conv2d: channels and kernel size must be "
                    "positive, got in=", in, " out=", out, " kernel=", k);
  EMBER_CHECK_VALUE(g > 0 && in % g == 0 && out % g == 0, "Conv2d: groups=", g,
                    " must divide in_channels=", in, " and out_channels=", out);
  Tensor w = empty({out, in / g, k, k});
  init::kaiming_uniform_(w, std::sqrt(5.0));
  weight = register_parameter("weight", w);
  if (with_bias) {
    Tensor b = empty({out});
    double bound = 1.0 / std::sqrt(static_cast<double>(in / g * k * k));
    init::uniform_(b, -bound, bound);
    bias = register_parameter("bias", b);
  }
}

Tensor Conv2d::forward(const Tensor& x) {
  EMBER_CHECK_SHAPE(x.dim() == 4 && x.shape()[1] == in_channels, "Conv2d(", in_channels, ", ",
                    out_channels, "): expected input of shape [N, ", in_channels,
                    ", H, W], got ", x.shape());
  if (!fused_relu) return conv2d(x, weight, bias, options);
  // The fused op is autograd-free and outside autocast's table.
  if (GradMode::is_enabled() || autocast_applies({&x, &weight, &bias}))
    return relu(conv2d(x, weight, bias, options));
  return ops::conv2d_bias_relu(x, weight, bias, options.params);
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
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=(" + std::to_string(kernel_size) + ", " +
                  std::to_string(kernel_size) + "), stride=(" + std::to_string(p.stride[0]) + ", " +
                  std::to_string(p.stride[1]) + ")";
  if (p.padding[0] || p.padding[1])
    s += ", padding=(" + std::to_string(p.padding[0]) + ", " + std::to_string(p.padding[1]) + ")";
  if (p.groups != 1) s += ", groups=" + std::to_string(p.groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
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

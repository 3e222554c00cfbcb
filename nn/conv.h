// Convolution and pooling layers: Conv2d, Conv1d, ConvTranspose2d, MaxPool2d, AvgPool2d,
// AdaptiveAvgPool2d.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "autograd/conv2d.h"
#include "autograd/conv_transpose2d.h"
#include "autograd/pool2d.h"
#include "nn/module.h"

namespace ember::nn {

// 2-D convolution over NCHW input. Weight [out, in / groups, kh, kw], initialised as PyTorch
// does: kaiming_uniform(a = sqrt(5)); bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
// padding_mode: "zeros" (the convolution's own padding), or "reflect", "replicate", "circular":
// the input padded by F.pad in that mode (the amounts of options' padding, "same" included),
// then a convolution without padding, as PyTorch. Errors (at construction): ValueError for a
// non-positive size, groups not dividing the channels, an unknown padding_mode (naming it and
// the four allowed) and padding "same" with a stride other than 1.
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
         Conv2dOptions options = Conv2dOptions(), bool bias = true);
  Conv2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel_size,
         Conv2dOptions options = Conv2dOptions(), bool bias = true,
         const std::string& padding_mode = "zeros");
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv2d"; }
  std::string extra_repr() const override;
  // Replaces the bias's values with b's ([out_channels]), registering a bias parameter where
  // there was none; an undefined b removes it (fuse_for_inference uses both).
  void set_bias(const Tensor& b);

  Tensor weight, bias;
  int64_t in_channels, out_channels;
  std::array<int64_t, 2> kernel_size;
  Conv2dOptions options;
  std::string padding_mode;
  // Set by fuse_for_inference (nn/fuse.h): forward applies relu too, in one cuDNN graph on cuda
  // under no_grad (ops::conv2d_bias_relu), as convolution then relu otherwise (and under autocast).
  bool fused_relu = false;
};

// 1-D convolution over [N, C, L] input (conv1d: a 2-D convolution of height 1). Weight
// [out, in / groups, k], PyTorch's initialisation and padding modes, as Conv2d.
class Conv1d : public Module {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
         Conv1dOptions options = Conv1dOptions(), bool bias = true,
         const std::string& padding_mode = "zeros");
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv1d"; }
  std::string extra_repr() const override;

  Tensor weight, bias;
  int64_t in_channels, out_channels, kernel_size;
  Conv1dOptions options;
  std::string padding_mode;
};

// 2-D transposed convolution (ops/conv_transpose2d.h). Weight [in, out / groups, kh, kw],
// initialised as PyTorch does (kaiming_uniform(a = sqrt(5)), fan_in = out / groups * kh * kw).
// padding_mode "zeros" only (ValueError otherwise, as PyTorch).
class ConvTranspose2d : public Module {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel_size,
                  ConvTranspose2dOptions options = ConvTranspose2dOptions(), bool bias = true,
                  const std::string& padding_mode = "zeros");
  Tensor forward(const Tensor& x) override;
  // With the output's spatial size [H, W] chosen (PyTorch's output_size argument): the output
  // padding that gives it, which must lie in [0, stride) per dim (ValueError naming the range).
  Tensor forward(const Tensor& x, const std::vector<int64_t>& output_size);
  std::string name() const override { return "ConvTranspose2d"; }
  std::string extra_repr() const override;

  Tensor weight, bias;
  int64_t in_channels, out_channels;
  std::array<int64_t, 2> kernel_size;
  ConvTranspose2dOptions options;
};

class MaxPool2d : public Module {
 public:
  // stride 0 = kernel_size, as PyTorch's default.
  explicit MaxPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0,
                     int64_t dilation = 1, bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "MaxPool2d"; }
  std::string extra_repr() const override;

 private:
  int64_t kernel_, stride_, padding_, dilation_;
  bool ceil_mode_;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "AvgPool2d"; }
  std::string extra_repr() const override;

 private:
  int64_t kernel_, stride_, padding_;
  bool ceil_mode_, count_include_pad_;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(std::array<int64_t, 2> output_size) : output_size_(output_size) {}
  explicit AdaptiveAvgPool2d(int64_t output_size) : output_size_{output_size, output_size} {}
  Tensor forward(const Tensor& x) override { return adaptive_avg_pool2d(x, output_size_); }
  std::string name() const override { return "AdaptiveAvgPool2d"; }
  std::string extra_repr() const override;

 private:
  std::array<int64_t, 2> output_size_;
};

}  // namespace ember::nn

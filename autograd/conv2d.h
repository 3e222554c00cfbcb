// Differentiable 2-D convolution: what users call. Runs ops::conv2d and records a backward
// that computes the gradients of x, w and bias (each only when it is needed).
//
//   Tensor y = ember::conv2d(x, w, b, Conv2dOptions().stride(2).padding(1));
//   Tensor y = ember::conv2d(x, w, b, /*stride=*/2, /*padding=*/1);
//
// requires / errors: as ops::conv2d (ops/conv2d.h). `b` may be undefined (no bias).
#pragma once

#include <array>
#include <string>

#include "ops/conv2d.h"
#include "runtime/tensor.h"

namespace ember {

// How a convolution pads: by the explicit values of its params, or PyTorch's padding="same"
// (the output keeps the input's size; stride 1 only; an odd total pads one more at the end) or
// padding="valid" (none).
enum class ConvPadding : uint8_t { explicit_values, same, valid };

// PyTorch's defaults: stride 1, padding 0, dilation 1, groups 1.
struct Conv2dOptions {
  ops::Conv2dParams params;
  ConvPadding padding_kind = ConvPadding::explicit_values;

  Conv2dOptions& stride(int64_t s) { return stride(s, s); }
  Conv2dOptions& stride(int64_t h, int64_t w) {
    params.stride = {h, w};
    return *this;
  }
  Conv2dOptions& padding(int64_t p) { return padding(p, p); }
  Conv2dOptions& padding(int64_t h, int64_t w) {
    params.padding = {h, w};
    padding_kind = ConvPadding::explicit_values;
    return *this;
  }
  // "same" or "valid" (ValueError naming the string otherwise).
  Conv2dOptions& padding(const std::string& mode);
  Conv2dOptions& dilation(int64_t d) { return dilation(d, d); }
  Conv2dOptions& dilation(int64_t h, int64_t w) {
    params.dilation = {h, w};
    return *this;
  }
  Conv2dOptions& groups(int64_t g) {
    params.groups = g;
    return *this;
  }
};

// padding "same" requires stride 1 (ValueError, as PyTorch).
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(),
              const Conv2dOptions& options = Conv2dOptions());
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);

// The pads {left, right, top, bottom} (F.pad's order) that `options` gives an input for a
// kh x kw kernel: what a Conv2d whose padding_mode is not "zeros" pads with that mode before a
// convolution without padding.
std::array<int64_t, 4> conv2d_input_pads(const Conv2dOptions& options, int64_t kh, int64_t kw);

// 1-D convolution of x [N, C, L] with w [K, C / groups, k]: conv2d over a height of 1.
struct Conv1dOptions {
  int64_t stride_ = 1, padding_ = 0, dilation_ = 1, groups_ = 1;
  ConvPadding padding_kind = ConvPadding::explicit_values;

  Conv1dOptions& stride(int64_t s) {
    stride_ = s;
    return *this;
  }
  Conv1dOptions& padding(int64_t p) {
    padding_ = p;
    padding_kind = ConvPadding::explicit_values;
    return *this;
  }
  Conv1dOptions& padding(const std::string& mode);  // "same" or "valid"
  Conv1dOptions& dilation(int64_t d) {
    dilation_ = d;
    return *this;
  }
  Conv1dOptions& groups(int64_t g) {
    groups_ = g;
    return *this;
  }
  // The 2-D options of the height-1 convolution it runs as.
  Conv2dOptions as_2d() const;
};

// requires: x 3-D and w 3-D (ShapeError); otherwise as conv2d.
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(),
              const Conv1dOptions& options = Conv1dOptions());

}  // namespace ember

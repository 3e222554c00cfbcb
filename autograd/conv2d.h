// Differentiable 2-D convolution: what users call. Runs ops::conv2d and records a backward
// that computes the gradients of x, w and bias (each only when it is needed).
//
//   Tensor y = ember::conv2d(x, w, b, Conv2dOptions().stride(2).padding(1));
//   Tensor y = ember::conv2d(x, w, b, /*stride=*/2, /*padding=*/1);
//
// requires / errors: as ops::conv2d (ops/conv2d.h). `b` may be undefined (no bias).
#pragma once

#include "ops/conv2d.h"
#include "runtime/tensor.h"

namespace ember {

// PyTorch's defaults: stride 1, padding 0, dilation 1, groups 1.
struct Conv2dOptions {
  ops::Conv2dParams params;

  Conv2dOptions& stride(int64_t s) { return stride(s, s); }
  Conv2dOptions& stride(int64_t h, int64_t w) {
    params.stride = {h, w};
    return *this;
  }
  Conv2dOptions& padding(int64_t p) { return padding(p, p); }
  Conv2dOptions& padding(int64_t h, int64_t w) {
    params.padding = {h, w};
    return *this;
  }
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

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(),
              const Conv2dOptions& options = Conv2dOptions());
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);

}  // namespace ember

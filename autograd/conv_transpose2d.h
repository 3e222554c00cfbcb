// Differentiable 2-D transposed convolution (torch.nn.functional.conv_transpose2d; shapes and
// requirements in ops/conv_transpose2d.h). The forward is the convolution registry's
// backward-data; the gradients are conv2d's forward (x), backward-filter (w) and a sum (bias).
//
//   Tensor y = ember::conv_transpose2d(x, w, b, ConvTranspose2dOptions().stride(2).padding(1));
#pragma once

#include "ops/conv_transpose2d.h"
#include "runtime/tensor.h"

namespace ember {

// PyTorch's defaults: stride 1, padding 0, output_padding 0, groups 1, dilation 1.
struct ConvTranspose2dOptions {
  ops::ConvTranspose2dParams params;

  ConvTranspose2dOptions& stride(int64_t s) { return stride(s, s); }
  ConvTranspose2dOptions& stride(int64_t h, int64_t w) {
    params.conv.stride = {h, w};
    return *this;
  }
  ConvTranspose2dOptions& padding(int64_t p) { return padding(p, p); }
  ConvTranspose2dOptions& padding(int64_t h, int64_t w) {
    params.conv.padding = {h, w};
    return *this;
  }
  ConvTranspose2dOptions& output_padding(int64_t p) { return output_padding(p, p); }
  ConvTranspose2dOptions& output_padding(int64_t h, int64_t w) {
    params.output_padding = {h, w};
    return *this;
  }
  ConvTranspose2dOptions& dilation(int64_t d) { return dilation(d, d); }
  ConvTranspose2dOptions& dilation(int64_t h, int64_t w) {
    params.conv.dilation = {h, w};
    return *this;
  }
  ConvTranspose2dOptions& groups(int64_t g) {
    params.conv.groups = g;
    return *this;
  }
};

// Half precision under autocast (PyTorch's policy), as conv2d.
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(),
                        const ConvTranspose2dOptions& options = ConvTranspose2dOptions());

}  // namespace ember

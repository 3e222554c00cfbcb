// 2-D transposed convolution (PyTorch's conv_transpose2d), autograd-free, built on the
// convolution registry: its forward is conv2d's backward-data (ops::conv2d_backward_data), its
// input gradient conv2d's forward and its weight gradient conv2d's backward-filter, so every
// algorithm and policy of the registry serves it on every device.
//
// Shapes: x [N, Cin, H, W], w [Cin, Cout / groups, R, S], bias [Cout], y [N, Cout, OH, OW] with
//   OH = (H - 1) * stride_h - 2 * pad_h + dil_h * (R - 1) + output_padding_h + 1 (OW alike).
// requires: as conv2d (ops/conv2d.h) for the convolution whose backward-data this is; Cin
//           divisible by groups (ShapeError); 0 <= output_padding < max(stride, dilation) per dim
//           (ValueError, as PyTorch); x, w, bias of one floating dtype and device.
// ensures:  a new contiguous y of x's dtype. A float16/bfloat16 convolution with a bias runs in
//           float32 and rounds once (the bias is added before the rounding).
#pragma once

#include <array>

#include "ops/conv2d.h"
#include "runtime/tensor.h"

namespace ember::ops {

struct ConvTranspose2dParams {
  Conv2dParams conv;  // stride, padding, dilation, groups of the convolution it transposes
  std::array<int64_t, 2> output_padding{0, 0};
};

Shape conv_transpose2d_output_shape(const Shape& x_shape, const Shape& w_shape,
                                    const ConvTranspose2dParams& p);

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvTranspose2dParams& p);

// dL/dx from dL/dy (y's shape): the convolution of grad_y with w.
Tensor conv_transpose2d_backward_input(const Tensor& grad_y, const Tensor& w, const Shape& x_shape,
                                       const ConvTranspose2dParams& p);
// dL/dw from dL/dy and x.
Tensor conv_transpose2d_backward_weight(const Tensor& grad_y, const Tensor& x, const Shape& w_shape,
                                        const ConvTranspose2dParams& p);

}  // namespace ember::ops

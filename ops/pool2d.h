// 2-D pooling over NCHW tensors (float32/float64, CPU), autograd-free: max pooling with
// indices, average pooling and adaptive average pooling, each with its backward.
//
// Output sizes follow PyTorch: out = floor_or_ceil((in + 2*pad - dil*(k-1) - 1) / stride) + 1,
// and with ceil_mode a last window that would start in the right padding is dropped.
// Errors name the op and the shapes: ShapeError for an input that is not 4-D or an output size
// below 1; ValueError for kernel/stride/dilation < 1, padding < 0 or more than half the
// kernel; DTypeError for non-float inputs; DeviceError for operands on different devices.
// Tensors on cuda/emu run kernels/cuda/pool2d.cu; there max_pool2d_backward ignores indices
// outside the plane instead of raising IndexError (the check would need a host sync). On cuda,
// cuDNN's pooling runs where it serves and the op's preference allows (ops/cudnn_ops.h; not
// with dilation, divisor_override or ceil_mode's extra window).
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "runtime/tensor.h"

namespace ember::ops {

struct MaxPool2dParams {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{0, 0};  // 0: same as kernel
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  bool ceil_mode = false;
};

struct AvgPool2dParams {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{0, 0};  // 0: same as kernel
  std::array<int64_t, 2> padding{0, 0};
  bool ceil_mode = false;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // > 0: divide every window by this instead
};

// PyTorch's pooling_output_shape for one dim. requires: stride >= 1.
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                         bool ceil_mode);

// x [N, C, H, W] -> {values [N, C, OH, OW], indices (int64, position h*W + w within the plane)}.
// need_indices false lets cuDNN run it on cuda (ops/cudnn_ops.h): the indices are then undefined
// when it did, and the backward is the form from x and y.
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, const MaxPool2dParams& p,
                                     bool need_indices = true);
// requires: indices from max_pool2d on an input of shape x_shape; grad_y of the values' shape.
Tensor max_pool2d_backward(const Tensor& grad_y, const Tensor& indices, const Shape& x_shape);
// The backward from the forward's input x and output y (cuDNN's form): on cuda cuDNN's, where it
// serves; elsewhere Ember's, with the indices found again from x.
Tensor max_pool2d_backward(const Tensor& grad_y, const Tensor& x, const Tensor& y,
                           const MaxPool2dParams& p);

Tensor avg_pool2d(const Tensor& x, const AvgPool2dParams& p);
Tensor avg_pool2d_backward(const Tensor& grad_y, const Shape& x_shape, const AvgPool2dParams& p);

// x [N, C, H, W] -> [N, C, out[0], out[1]]. requires: out sizes >= 1 (ValueError otherwise).
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> out);
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_y, const Shape& x_shape);

}  // namespace ember::ops

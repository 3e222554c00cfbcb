// Layer, group and instance normalisation (PyTorch's definitions), autograd-free: each views its
// input as rows normalised by their own statistics (kernels/norm_rows_shape.h) and runs the
// device's norm_rows kernels, forward and backward (dx, dweight, dbias).
//
//   layer_norm     over the trailing dims given by normalized_shape; weight, bias of that shape.
//   group_norm     x [N, C, *] in num_groups groups of C / num_groups channels; weight, bias [C].
//   instance_norm  x [N, C, *] per (sample, channel); weight, bias [C]. (Running statistics and
//                  eval mode are the differentiable function's, autograd/layer_norm.h.)
//
// requires: x floating (float32, float64, float16, bfloat16; DTypeError otherwise), of any strides;
//           weight and bias each undefined or of the shape above, x's dtype and device
//           (ShapeError / DTypeError / DeviceError naming the op); layer_norm: a non-empty
//           normalized_shape equal to x's trailing dims (ShapeError); group_norm: x of 2 or more
//           dims whose C num_groups divides (ValueError); instance_norm: x of 3 or more dims.
// ensures:  out of x's shape and dtype, contiguous; mean and rstd = 1 / sqrt(biased var + eps)
//           per row ([rows]: the leading dims' product, N * num_groups, N * C), float64 for a
//           float64 x and float32 otherwise (half types keep float32 statistics); an empty row
//           gives NaN statistics.
#pragma once

#include "runtime/tensor.h"

namespace ember::ops {

struct NormOutput {
  Tensor out, mean, rstd;
};

NormOutput layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                      const Tensor& bias, double eps);
NormOutput group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                      double eps);
NormOutput instance_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);

// Which gradients a backward computes (the others come back undefined).
struct NormWants {
  bool input = true, weight = false, bias = false;
};
struct NormGrads {
  Tensor grad_input, grad_weight, grad_bias;
};

// The gradients from grad_out (x's shape) and the forward's mean and rstd. requires: the forward's
// arguments; grad_out of x's shape, dtype and device.
NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                              const Shape& normalized_shape, const Tensor& weight,
                              const Tensor& mean, const Tensor& rstd, NormWants want);
NormGrads group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t num_groups,
                              const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                              NormWants want);
NormGrads instance_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                 const Tensor& mean, const Tensor& rstd, NormWants want);

}  // namespace ember::ops

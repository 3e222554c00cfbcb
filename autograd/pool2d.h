// Differentiable 2-D pooling: what users call. Each runs the op from ops/pool2d.h and records
// its backward. Requirements and errors as there.
//
//   Tensor y = ember::max_pool2d(x, /*kernel=*/3, /*stride=*/2, /*padding=*/1);
//   Tensor y = ember::avg_pool2d(x, 2);
//   Tensor y = ember::adaptive_avg_pool2d(x, {1, 1});
#pragma once

#include <array>
#include <utility>

#include "ops/pool2d.h"
#include "runtime/tensor.h"

namespace ember {

// stride 0 means "same as kernel", as PyTorch's default.
Tensor max_pool2d(const Tensor& x, int64_t kernel, int64_t stride = 0, int64_t padding = 0,
                  int64_t dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& x, const ops::MaxPool2dParams& p);
// Values (differentiable) and the int64 argmax indices, like return_indices=True.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const ops::MaxPool2dParams& p);

Tensor avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride = 0, int64_t padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool2d(const Tensor& x, const ops::AvgPool2dParams& p);

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size);

}  // namespace ember

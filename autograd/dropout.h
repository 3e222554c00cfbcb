// Differentiable dropout (semantics and requirements in ops/dropout.h).
#pragma once

#include "runtime/rng.h"
#include "runtime/tensor.h"

namespace ember {

// In training, zeroes each element with probability p (mask from `gen`, or the default
// generator) and scales the rest by 1 / (1 - p); the backward applies the same mask and scale.
// Eval or p = 0: identity. p = 1: zeros (zero gradient).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);

// Channel dropout (torch.nn.functional.dropout2d, and dropout1d/3d alike): in training each
// channel x[n, c] is zeroed whole with probability p, the rest scaled by 1 / (1 - p). The mask is
// dropout's on a [N, C, 1, ...] tensor of ones, so every device draws the same channels for the
// same generator state. requires: x of 2 or more dims (ShapeError), p in [0, 1] (ValueError). A
// 3-D x is [N, C, L], as PyTorch 1.13 reads it.
Tensor feature_dropout(const Tensor& x, double p = 0.5, bool training = true,
                       Generator* gen = nullptr);

}  // namespace ember

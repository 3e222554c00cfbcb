// Differentiable dropout (semantics and requirements in ops/dropout.h).
#pragma once

#include "runtime/rng.h"
#include "runtime/tensor.h"

namespace ember {

// In training, zeroes each element with probability p (mask from `gen`, or the default
// generator) and scales the rest by 1 / (1 - p); the backward applies the same mask and scale.
// Eval or p = 0: identity. p = 1: zeros (zero gradient).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);

}  // namespace ember

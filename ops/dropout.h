// Dropout: zeroes each element with probability p and scales the kept ones by 1 / (1 - p).
//
// requires: 0 <= p <= 1 (ValueError otherwise); x float32 or float64 on any device.
// ensures:  in training with 0 < p < 1, the keep mask is drawn from `gen` (the default generator
//           when null) as bernoulli_(mask, 1 - p, gen) would draw it, consuming the same blocks of
//           its stream, the same mask on every device; p = 0 or eval returns x itself and p = 1
//           returns zeros, neither drawing.
// These ops are autograd-free; autograd/dropout.h holds the differentiable function.
#pragma once

#include "runtime/rng.h"
#include "runtime/tensor.h"

namespace ember::ops {

struct DropoutOutput {
  Tensor out;
  Tensor mask;  // bool, x's shape; undefined when nothing was drawn (p = 0, p = 1 or eval)
};

DropoutOutput dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);

// grad_out * mask / (1 - p). requires: mask bool of grad_out's shape; 0 <= p < 1.
Tensor dropout_backward(const Tensor& grad_out, const Tensor& mask, double p);

}  // namespace ember::ops

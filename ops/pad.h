// F.pad: constant, reflect, replicate and circular padding with PyTorch's pad list (pairs
// (before, after) for the last dim first, then the one before it, ...; negative values crop),
// autograd-free. The device's pad kernels (kernels/pad_shape.h) do the work; the backward gathers
// each input element's gradient from the outputs that read it (no atomics, deterministic).
//
// requires: an even pad list (ValueError) of at most 2 * x.dim() values (ValueError); constant
//           mode: any dtype the device computes; the others: floating x, 1 to 3 padded dims, x of
//           pairs + 1 or pairs + 2 dims (ValueError), each reflect pad < the dim's size, each
//           circular pad <= the dim's size after negative pads crop (ValueError naming the pad,
//           the dim and its size), replicate on non-empty dims; value 0 for non-constant modes;
//           no resulting dim negative (ValueError).
// ensures:  a new contiguous tensor of x's dtype, each padded dim of size in + before + after.
#pragma once

#include <string>
#include <vector>

#include "kernels/pad_shape.h"
#include "runtime/tensor.h"

namespace ember::ops {

using kernels::PadMode;

// "constant", "reflect", "replicate" or "circular"; ValueError naming `mode` and the four
// otherwise (`op` names the caller: "pad", "Conv2d", ...).
PadMode pad_mode_from_string(const char* op, const std::string& mode);
const char* pad_mode_name(PadMode mode);

// The padded shape (checks as above).
Shape pad_output_shape(const Shape& x_shape, const std::vector<int64_t>& pad, PadMode mode);

Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, PadMode mode, double value = 0.0);

// dL/dx for y = pad(x, pad, mode) given dL/dy (the padded shape).
Tensor pad_backward(const Tensor& grad_out, const Shape& x_shape, const std::vector<int64_t>& pad,
                    PadMode mode);

}  // namespace ember::ops

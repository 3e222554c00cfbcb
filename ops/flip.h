// Copies that reorder elements along dims, as torch.flip and torch.roll.
//
// requires: dims in range and not repeated (IndexError / ValueError naming the op); roll: as many
//           shifts as dims (ValueError).
// ensures:  a new contiguous tensor of x's shape and dtype, on x's device, by the device's strided
//           copy kernel (flip reads x with its strides negated along the flipped dims).
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember::ops {

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);
// Elements shifted by shifts[i] along dims[i] (wrapping around); with dims empty, x flattened,
// rolled by shifts[0] and reshaped back.
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims);

}  // namespace ember::ops

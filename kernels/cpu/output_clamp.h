// Output bounds for the cpu's convolution kernels that clamp y as they write it, while it is in
// cache (ops::conv2d_bias_clamp: ReLU is [0, inf), ReLU6 [0, 6]).
#pragma once

namespace ember::kernels::cpu {

// y = clamp(y, lo, hi) as kernels/cpu/loops.h's clamp_value computes it (NaN passes through).
// requires: lo <= hi.
struct OutputClamp {
  double lo, hi;
};

}  // namespace ember::kernels::cpu

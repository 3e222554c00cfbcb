// The plain parameters of softmax and log_softmax: the input viewed as contiguous
// [outer, dim, inner], normalised along the middle dim. Shared by the CPU and GPU kernels.
#pragma once

#include <cstdint>

namespace ember::kernels {

// The kernels: softmax_fwd(t, s, log, x, y), softmax_bwd(t, s, log, y, dy, dx).
// requires: t float32 or float64; outputs not overlapping inputs.
// ensures:  softmax_fwd: y = exp(x - max) / sum, or x - (max + log(sum)) for log, along dim
//           (sums in double, the max subtracted first, a row of -inf takes max 0);
//           softmax_bwd from the forward output y: dx = y * (dy - sum(dy * y)), or
//           dy - exp(y) * sum(dy) for log.
struct SoftmaxShape {
  int64_t outer = 1, dim = 1, inner = 1;
};

}  // namespace ember::kernels

// Differentiable F.pad (semantics and requirements in ops/pad.h).
//
//   Tensor y = ember::pad(x, {1, 1, 2, 0}, "reflect");  // last dim 1 | 1, the one before 2 | 0
#pragma once

#include <string>
#include <vector>

#include "ops/pad.h"
#include "runtime/tensor.h"

namespace ember {

// mode: "constant" (filled with value), "reflect", "replicate" or "circular" (ValueError naming
// the mode otherwise).
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, const std::string& mode = "constant",
           double value = 0.0);
Tensor pad(const Tensor& x, const std::vector<int64_t>& pad, ops::PadMode mode, double value = 0.0);

}  // namespace ember

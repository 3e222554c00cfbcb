// Reductions over chosen dims, with keepdim, as in PyTorch.
//
// requires: tensors (cpu, cuda or emu) of f32, f64, i32, i64, u8 or bool; dims in range
//           (IndexError naming the op and the shape otherwise), no dim repeated (ValueError); an
//           empty `dims` list means "all dims".
// ensures:  sum/mean/var/std of integer or bool input: sum gives int64, mean/var/std need a
//           floating input (DTypeError otherwise). max/min/argmax/argmin of an empty
//           reduction raise ValueError. argmax/argmin return int64 indices of the first extreme.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember::ops {

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amax(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& a, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Variance with Bessel's correction `correction` (1 = unbiased, PyTorch's default).
Tensor var(const Tensor& a, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& a, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
           bool keepdim = false);
// Over one dim; with dim = nullopt-like kAllDims, over the flattened tensor.
constexpr int64_t kAllDims = INT64_MIN;
Tensor argmax(const Tensor& a, int64_t dim = kAllDims, bool keepdim = false);
Tensor argmin(const Tensor& a, int64_t dim = kAllDims, bool keepdim = false);

}  // namespace ember::ops

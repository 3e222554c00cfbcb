// The shape and parameters of a batch normalisation over [N, C, S] contiguous data (S = the
// product of the spatial sizes, 1 for [N, C] input), as the kernels see them (plain values,
// shared by CPU and CUDA kernels).
#pragma once

#include <cstdint>

namespace ember::kernels {

// The kernels: batch_norm_fwd / batch_norm_bwd (kernels/kernel_table.h).
// requires: t float32 or float64; x, y, dy, dx hold n*c*s contiguous elements, every other
//           buffer c; weight and bias may be null (1 and 0); training needs n*s > 1 and eval both
//           running buffers (ops/batch_norm.cpp checks); workspace holds
//           batch_norm_workspace_bytes(shape).
// ensures:  batch_norm_fwd: y, save_mean, save_invstd and (training, when not null) the running
//           stats updated with momentum and the unbiased variance; statistics accumulate in
//           double in a fixed order (deterministic). batch_norm_bwd: dx, dweight, dbias (each
//           may be null), sums in double in a fixed order.
struct BatchNormShape {
  int64_t n = 0, c = 0, s = 1;
};

struct BatchNormParams {
  bool training = true;
  double momentum = 0.1;
  double eps = 1e-5;
};

}  // namespace ember::kernels

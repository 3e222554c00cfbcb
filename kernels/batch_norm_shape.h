// The shape and parameters of a batch normalisation over [N, C, S] contiguous data (S = the
// product of the spatial sizes, 1 for [N, C] input), as the kernels see them (plain values,
// shared by CPU and CUDA kernels).
#pragma once

#include <cstdint>

namespace ember::kernels {

struct BatchNormShape {
  int64_t n = 0, c = 0, s = 1;
};

struct BatchNormParams {
  bool training = true;
  double momentum = 0.1;
  double eps = 1e-5;
};

}  // namespace ember::kernels

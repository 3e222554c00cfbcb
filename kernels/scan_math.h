// cumprod's gradient along one line, shared by the cpu kernel and the GPU kernel so that every
// device computes the same values (kernels/sort_shape.h has the contract).
#pragma once

#include <cstdint>

#include "runtime/host_device.h"

namespace ember::kernels {

// dx[i] = sum over k >= i of g[k] * prod over m <= k, m != i of x[m], for the n elements
// `stride` apart, T float or double. Two walks and no division, so zeros in x are exact: from
// the front, dx[i] = x[0] ... x[i-1] (rounded to T); from the end, S_i = g[i] + x[i+1] S_{i+1}
// in double, and dx[i] *= S_i.
template <typename T>
EMBER_HOST_DEVICE void cumprod_backward_line(int64_t n, int64_t stride, const T* x, const T* g,
                                             T* dx) {
  double prefix = 1.0;
  for (int64_t i = 0; i < n; ++i) {
    dx[i * stride] = static_cast<T>(prefix);
    prefix *= static_cast<double>(x[i * stride]);
  }
  double suffix = 0.0, next_x = 0.0;
  for (int64_t i = n - 1; i >= 0; --i) {
    suffix = static_cast<double>(g[i * stride]) + next_x * suffix;
    next_x = static_cast<double>(x[i * stride]);
    dx[i * stride] = static_cast<T>(static_cast<double>(dx[i * stride]) * suffix);
  }
}

}  // namespace ember::kernels

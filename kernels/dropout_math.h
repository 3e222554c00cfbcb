// The dropout of one Philox block: the rule that the CPU kernels (kernels/cpu/dropout.cpp) and the
// GPU kernels (kernels/cuda/dropout.cu) both apply, so the two devices draw the same mask bit for
// bit. It is the rule of a bernoulli fill of probability keep = 1 - p (runtime/rng.h): element i
// keeps when the uniform of lane i % 4 of Philox block offset + i / 4 is below keep.
#pragma once

#include <cstdint>

#include "runtime/host_device.h"
#include "runtime/philox.h"

namespace ember::kernels {

// Masks and scales elements 4b .. 4b + 3 (those below n): mask[i] = uniform_i < keep,
// y[i] = mask[i] ? x[i] * scale : 0.
// T is the stored type, C the one the product is computed in (float for the half types).
template <typename T, typename C>
EMBER_HOST_DEVICE void dropout_block(int64_t b, int64_t n, uint64_t seed, uint64_t offset,
                                     double keep, C scale, const T* x, bool* mask, T* y) {
  const uint64_t block = offset + static_cast<uint64_t>(b);
  const Philox4 r =
      philox4x32_10(static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0, 0,
                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const int64_t end = n - 4 * b < 4 ? n - 4 * b : 4;
  for (int64_t l = 0; l < end; ++l) {
    const int64_t i = 4 * b + l;
    const bool k = static_cast<double>(philox_uniform(r.v[l])) < keep;
    mask[i] = k;
    y[i] = static_cast<T>(k ? C(x[i]) * scale : C(0));
  }
}

}  // namespace ember::kernels

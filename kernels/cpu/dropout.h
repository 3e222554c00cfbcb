// CPU kernels for dropout. The keep mask comes from the Philox stream exactly as a bernoulli
// fill of probability 1 - p would draw it (runtime/rng.h): element i keeps when the uniform of
// lane i % 4 of block offset + i / 4 is below 1 - p. A GPU kernel with the same rule gives the
// same mask.
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace ember::kernels::cpu {

// mask[i] = uniform_i < 1 - p; y[i] = mask[i] ? x[i] * scale : 0, over n contiguous elements.
// requires: t is f32 or f64; 0 <= p < 1.
void dropout_fwd_cpu(DType t, int64_t n, uint64_t seed, uint64_t offset, double p, double scale,
                     const void* x, bool* mask, void* y);

// dx[i] = mask[i] ? dy[i] * scale : 0.
void dropout_bwd_cpu(DType t, int64_t n, double scale, const bool* mask, const void* dy, void* dx);

}  // namespace ember::kernels::cpu

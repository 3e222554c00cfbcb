// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator. Output block b of a stream is philox(counter = b, key = seed), so any
// element can be computed independently; CPU and GPU code share this header and therefore give
// the same numbers for the same seed.
//
// Element i of a fill that starts at block `offset` uses lane i % 4 of block offset + i / 4.
#pragma once

#include <cstdint>

#include "runtime/host_device.h"

namespace ember {

// The distributions of the random fills (runtime/rng.h on the cpu, the fill kernels on a GPU).
enum class RandomDist : uint8_t { Uniform, Normal, Bernoulli };

struct Philox4 {
  uint32_t v[4];
};

EMBER_HOST_DEVICE void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// One Philox4x32-10 block: counter (4 words), key (2 words).
EMBER_HOST_DEVICE Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                        uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(kM0, c0, hi0, lo0);
    philox_mulhilo(kM1, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// The 32-bit word for element `i` of a stream (seed, offset in blocks).
EMBER_HOST_DEVICE uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t i) {
  uint64_t block = offset + i / 4;
  Philox4 r = philox4x32_10(static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0, 0,
                            static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return r.v[i % 4];
}

// Uniform in [0, 1) with 24 random bits (exactly representable as float).
EMBER_HOST_DEVICE float philox_uniform(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}
// Uniform in (0, 1], for logarithms.
EMBER_HOST_DEVICE float philox_uniform_open0(uint32_t x) {
  return static_cast<float>((x >> 8) + 1u) * (1.0f / 16777216.0f);
}

}  // namespace ember

// Random numbers: a seeded Philox4x32-10 generator and the fills built on it.
//
// A Generator is (seed, offset): each fill reserves the blocks it consumes by advancing the
// offset, so fills are reproducible from the seed and independent of thread count. The same
// seed gives the same numbers on every device (runtime/philox.h).
#pragma once

#include <cstdint>
#include <mutex>

#include "runtime/philox.h"
#include "runtime/tensor.h"

namespace ember {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0x853c49e6748fea9bull) : seed_(seed) {}
  void manual_seed(uint64_t seed);
  uint64_t seed() const;
  uint64_t offset() const;
  void set_state(uint64_t seed, uint64_t offset);
  // Reserves enough blocks for `n` elements (4 per block) and returns the first block.
  uint64_t reserve(uint64_t n);

 private:
  mutable std::mutex mu_;
  uint64_t seed_, offset_ = 0;
};

// The process-wide generator used when none is passed.
Generator& default_generator();
void manual_seed(uint64_t seed);

// The fill of a tensor on a GPU-like device with its kernels, from (seed, offset) as the CPU
// fill would; runtime/ cannot include kernels, so ops/ registers it when the library loads.
// Returns false when it has no kernel for the tensor, which is then filled on the host.
using DeviceRandomFillFn = bool (*)(Tensor& t, RandomDist dist, double a, double b, uint64_t seed,
                                    uint64_t offset);
void set_device_random_fill(DeviceRandomFillFn fn);

// The cpu fill: n contiguous float64 values on the host; element i depends only on
// (seed, offset, i) (runtime/philox.h). Every fill of a cpu tensor goes through it (other dtypes
// are cast from it), and the GPU fill kernels compute the same values.
void philox_fill_f64(double* out, int64_t n, uint64_t seed, uint64_t offset, RandomDist dist,
                     double a, double b);

// In-place fills of floating-point tensors (any device: GPU-like devices fill on the device
// through the registered kernels and give the same numbers). Throw DTypeError for non-floating
// tensors.
Tensor& uniform_(Tensor& t, double low = 0.0, double high = 1.0, Generator* gen = nullptr);
// Normal via Box-Muller on lane pairs: lanes (0,1) and (2,3) of each block give two normals.
Tensor& normal_(Tensor& t, double mean = 0.0, double stddev = 1.0, Generator* gen = nullptr);
// 1 with probability p, else 0 (any dtype but bool is fine; bool too).
Tensor& bernoulli_(Tensor& t, double p, Generator* gen = nullptr);

Tensor rand(const Shape& shape, TensorOptions opts = {}, Generator* gen = nullptr);
Tensor randn(const Shape& shape, TensorOptions opts = {}, Generator* gen = nullptr);

}  // namespace ember

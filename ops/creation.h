// Tensor factories that need kernels, with PyTorch's names and rules: randint, randperm,
// linspace, logspace, eye. Random ones draw from Philox (runtime/rng.h), so one seed gives the same
// numbers on cpu, cuda and emu.
//
// requires: sizes >= 0 and low < high (ValueError naming the factory and the values).
// ensures:  new contiguous tensors of opts' dtype (randint, randperm: int64 by default; linspace,
//           logspace, eye: float32) on opts' device.
#pragma once

#include "runtime/rng.h"
#include "runtime/tensor.h"

namespace ember::ops {

// Integers uniform in [low, high): low + floor(u * (high - low)) for Philox draws u in [0, 1).
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions opts = kInt64,
               Generator* gen = nullptr);
// A random permutation of 0..n-1: the positions that sort n Philox draws.
Tensor randperm(int64_t n, TensorOptions opts = kInt64, Generator* gen = nullptr);
// `steps` values evenly spaced from start to end, both included, computed in double from
// whichever end is nearer (as PyTorch, so both ends are exact), then converted.
Tensor linspace(double start, double end, int64_t steps, TensorOptions opts = {});
// base ** linspace(start, end, steps).
Tensor logspace(double start, double end, int64_t steps, double base = 10.0,
                TensorOptions opts = {});
// n x m (m = n by default), ones on the main diagonal.
Tensor eye(int64_t n, int64_t m = -1, TensorOptions opts = {});

}  // namespace ember::ops

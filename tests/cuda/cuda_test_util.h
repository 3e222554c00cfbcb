// Helpers for the CUDA backend's tests on the `emu` device: the thread orders every kernel runs
// in, operands laid out on the device, and comparison with a float64 CPU reference.
//
// Note [Kernel tests on hardware]: the `gpu` test executable compiles every tests/cuda/*.cpp a
// second time with EMBER_TEST_DEVICE_CUDA=1, under which emu() is cuda:0 and emu_orders() is one
// configuration (thread order means nothing on hardware), so the same tests check the nvcc
// build of the kernels on a real GPU. A test that is about the emulator itself (its reports,
// thread orders, emu-only behaviour) goes inside `#if !EMBER_TEST_DEVICE_CUDA`.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "ops/conv2d_cudnn.h"
#include "ops/op_test_util.h"
#include "runtime/tensor.h"
#include "simt/simt_test_util.h"

#ifndef EMBER_TEST_DEVICE_CUDA
#define EMBER_TEST_DEVICE_CUDA 0
#endif

namespace ember::test {

// The device the kernel tests run on: emu:0, or cuda:0 in the `gpu` executable.
inline Device emu() {
#if EMBER_TEST_DEVICE_CUDA
  return Device(DeviceType::CUDA, 0);
#else
  return Device::parse("emu:0");
#endif
}

// For a test of Ember's own selection on emu() (the cost model's picks): cuDNN is off while it
// lives, so that on cuda:0 (Note [Kernel tests on hardware]) cuDNN's engines, which the heuristic
// otherwise tries first, do not stand in front of Ember's kernels. Nothing changes on emu.
struct EmberKernelsOnly {
  EmberKernelsOnly() { ops::set_cudnn_enabled(false); }
  ~EmberKernelsOnly() { ops::reset_cudnn_enabled(); }
};

// Half an ulp of v in t, float16 or bfloat16 (0 for float32: the Tensor Core tests count its
// rounding in their accumulation term).
inline double half_ulp(double v, DType t) {
  if (t == kFloat32) return 0;
  const int bits = t == kFloat16 ? 11 : 8;  // significand bits
  const double a = std::max(std::abs(v), t == kFloat16 ? std::ldexp(1.0, -14) : 1e-38);
  return std::ldexp(1.0, std::ilogb(a) - bits);
}

// simt_test::test_orders() (forward, reverse and random thread order, one worker each); on
// cuda:0 a single configuration, which only sets emulator options the GPU never reads.
inline std::vector<simt_test::Config> emu_orders() {
#if EMBER_TEST_DEVICE_CUDA
  return {{simt::Order::Forward, 0, 1}};
#else
  return simt_test::test_orders();
#endif
}

// The gridDim.y / gridDim.z limit that a grid-limit test goes past, for its scope. On emu it is
// lowered to `emu_limit` (simt::Options::max_grid_yz, which the launchers read through the
// device properties), so a few blocks a launch run the same loops that 65535 would; on cuda:0 it
// is the GPU's own.
class ScopedGridLimit {
 public:
#if EMBER_TEST_DEVICE_CUDA
  explicit ScopedGridLimit(unsigned)
      : value_(static_cast<unsigned>(gpu::backend(DeviceType::CUDA).properties(0).max_grid_z)) {}
#else
  explicit ScopedGridLimit(unsigned emu_limit)
      : scoped_(with_limit(emu_limit)), value_(emu_limit) {}
#endif
  unsigned value() const {
    return value_;
  }

 private:
#if !EMBER_TEST_DEVICE_CUDA
  static simt::Options with_limit(unsigned limit) {
    simt::Options o = simt::options();
    o.max_grid_yz = limit;
    return o;
  }
  simt_test::ScopedOptions scoped_;
#endif
  unsigned value_ = 0;
};

// Every element of `got` (any device) close to `want` (a float64 reference), NaN matching NaN.
inline void check_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < a.size() && bad < 5; ++i) {
    const bool ok = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i] ||
                    std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i]);
    if (!ok) {
      ++bad;
      FAIL_CHECK("element ", i, ": got ", a[i], ", want ", b[i]);
    }
  }
}

}  // namespace ember::test

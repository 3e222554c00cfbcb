// Helpers for the CUDA backend's tests on the `emu` device: the thread orders every kernel runs
// in, operands laid out on the device, and comparison with a float64 CPU reference.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/op_test_util.h"
#include "runtime/tensor.h"
#include "simt/simt_test_util.h"

namespace ember::test {

inline Device emu() {
  return Device::parse("emu:0");
}

// Forward, reverse and random thread order, one worker each (deterministic runs).
inline std::vector<simt_test::Config> emu_orders() {
  return {{simt::Order::Forward, 0, 1}, {simt::Order::Reverse, 0, 1}, {simt::Order::Random, 7, 1}};
}

// A random tensor of logical shape `shape` living on `device` in the given layout; the same
// values (and layout) as random_operand with the same generator state, but the view is taken on
// the device, so the kernels see the strides.
inline Tensor device_operand(const Shape& shape, DType t, Layout layout, Device device, double lo,
                             double hi, std::mt19937& g) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (layout == Layout::transposed && nd >= 2) {
    Shape s = shape;
    std::swap(s[nd - 1], s[nd - 2]);
    return random_tensor(s, t, lo, hi, g).to(device).transpose(-1, -2);
  }
  if (layout == Layout::sliced && nd >= 1) {
    Shape s = shape;
    s[nd - 1] = 2 * shape[nd - 1] + 1;
    return random_tensor(s, t, lo, hi, g).to(device).slice(-1, 1, s[nd - 1], 2);
  }
  if (layout == Layout::expanded && nd >= 1) {
    Shape s = shape;
    s[0] = 1;
    return random_tensor(s, t, lo, hi, g).to(device).expand(shape);
  }
  return random_tensor(shape, t, lo, hi, g).to(device);
}

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

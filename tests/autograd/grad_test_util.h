// What the gradcheck tests share (tests/autograd on the cpu, tests/cuda on the GPU
// backends).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/leaf.h"
#include "runtime/tensor.h"

namespace ember::test {

// Distinct float64 values at least 0.05 apart, in a shuffled order, so no max-pool window has a
// near tie that a finite-difference step could flip.
inline Tensor distinct_values(const Shape& s, std::mt19937& g) {
  std::vector<double> v(static_cast<size_t>(checked_numel(s)));
  std::iota(v.begin(), v.end(), 0.0);
  std::shuffle(v.begin(), v.end(), g);
  for (double& x : v) x *= 0.05;
  return from_vector(v, s);
}

// Checks f's gradients at `inputs` with gradcheck's defaults; a failure shows gradcheck's reason.
inline void expect_gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                             const std::vector<Tensor>& inputs) {
  std::string why;
  const bool ok = gradcheck(f, inputs, {}, &why);
  CAPTURE(why);
  CHECK(ok);
}

// A float64 leaf of shape `s` holding `v`, that requires grad.
inline Tensor leaf(std::vector<double> v, const Shape& s) {
  Tensor t = from_vector(v, s);
  requires_grad_(t);
  return t;
}

// a == b elementwise within 1e-12 relative.
inline void check_values_close(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
}

}  // namespace ember::test

// gradcheck: compares the gradients autograd computes with central finite differences.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-3;
};

// requires: every input is a float64 leaf tensor that requires grad; f returns one tensor.
// ensures: returns true when, for every output element and every input element, the analytic
// derivative (via autograd::grad) matches the central difference; otherwise false with the first
// mismatch described in *why (input, element index, both values).
bool gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
               const std::vector<Tensor>& inputs, const GradcheckOptions& opts = {},
               std::string* why = nullptr);

}  // namespace ember

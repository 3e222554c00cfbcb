// Helpers for the seeded-bug tests (test_diagnostics.cpp, test_mma_diagnostics.cpp).
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kernels/cuda/fill.cuh"
#include "runtime/error.h"

namespace ember::simt_test {

// The message of the CudaError `launch` throws ("" if it throws none).
template <typename F>
std::string error_of(F launch) {
  try {
    launch();
  } catch (const CudaError& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A good kernel still runs correctly after a failed launch.
inline void check_still_usable() {
  std::vector<float> y(1000, 0.0f);
  kernels::emu::fill_f32(y.data(), 3.0f, 1000, nullptr);
  for (float v : y) REQUIRE(v == 3.0f);
}

}  // namespace ember::simt_test

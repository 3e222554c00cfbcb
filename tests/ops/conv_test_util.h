// What the conv2d tests share (tests/ops on the cpu, tests/cuda on the GPU backends): a
// case table row, the parameters in one call, a guard that restores the algorithm registry, and
// how to tell a build that lacks an algorithm's instructions.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"

namespace ember::test {

// Stride, padding and dilation (height, width) and groups.
inline ops::Conv2dParams conv_params(int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                                     int64_t dw, int64_t g) {
  ops::Conv2dParams p;
  p.stride = {sh, sw}, p.padding = {ph, pw}, p.dilation = {dh, dw}, p.groups = g;
  return p;
}

// x is n x c x h x w, the filters k x c/groups x r x s.
struct ConvCase {
  const char* name;
  int64_t n, c, h, w, k, r, s;
  ops::Conv2dParams p;
};

// Restores the registry's policy (no forced algorithm, not deterministic, empty cache) after a
// test changes it.
struct ConvPolicyGuard {
  ~ConvPolicyGuard() {
    ops::set_conv_algo("");
    ops::set_conv_deterministic(false);
    unsetenv("EMBER_CONV_ALGO");
    ops::clear_conv_algo_cache();
  }
};

// True when the registry refuses candidate `c` because this build lacks the instructions it
// needs (implicit_gemm on the cpu without AVX-512: "built without AVX-512"). Such a candidate is a case
// to skip, loudly, with that reason; any other refusal is the registry's to justify.
inline bool built_without_instructions(const ops::ConvCandidate& c) {
  return !c.supported && c.reason.find("built without") != std::string::npos;
}

}  // namespace ember::test

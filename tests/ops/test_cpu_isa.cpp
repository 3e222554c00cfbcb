// The cpu micro-kernels' instruction set (kernels/cpu/cpu_isa.h): the EMBER_CPU_ISA cap and its
// API refuse bad values; with the baseline cap implicit_gemm says why it cannot run and the
// registry falls back to im2col_gemm; each instruction set's implicit_gemm gives the same bits
// run after run; its cost reflects the vector width. Its values against float64 loops, per
// instruction set: tests/spec/conv2d.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/conv2d_implicit_gemm.h"
#include "kernels/cpu/cpu_isa.h"
#include "op_test_util.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "skip_case.h"

using namespace ember;
using namespace ember::test;
namespace kc = ember::kernels::cpu;
using kc::CpuIsa;
using ops::ConvDirection;

namespace {

// Restores the cap (API and environment) and the registry's policy after a test changes them.
struct IsaGuard {
  ConvPolicyGuard policy;
  ~IsaGuard() {
    kc::set_cpu_isa_cap("");
    unsetenv("EMBER_CPU_ISA");
    ops::clear_conv_algo_cache();
  }
};

void set_cap(const std::string& isa) {
  kc::set_cpu_isa_cap(isa);
  ops::clear_conv_algo_cache();
}

const ops::ConvCandidate& candidate(const ops::ConvSelection& sel, const std::string& name) {
  for (const ops::ConvCandidate& c : sel.candidates)
    if (c.name == name) return c;
  FAIL("no candidate " << name);
  return sel.candidates.front();
}

// The float32 values of a tensor, as bits to compare.
std::vector<float> values(const Tensor& t) {
  return t.to_vector<float>();
}
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("cpu isa: bad EMBER_CPU_ISA and set_cpu_isa_cap values are ValueErrors that say why") {
  IsaGuard guard;
  setenv("EMBER_CPU_ISA", "avx3", 1);
  try {
    kc::cpu_isa();
    FAIL("expected a ValueError");
  } catch (const ValueError& e) {
    check_message(e.what(), {"EMBER_CPU_ISA", "avx3", "avx512, avx2, baseline"});
  }
  // At the first convolution, as for EMBER_CONV_ALGO: never a silent fallback.
  const Tensor x = ones({2, 3, 8, 8}), w = ones({4, 3, 3, 3});
  CHECK_THROWS_AS(ops::conv2d(x, w, Tensor(), {}), ValueError);
  setenv("EMBER_CPU_ISA", "", 1);  // empty: no cap
  CHECK(kc::cpu_isa() == kc::cpu_isa_detected());
  unsetenv("EMBER_CPU_ISA");
  CHECK(kc::cpu_isa() == kc::cpu_isa_detected());

  for (const char* bad : {"AVX2", "sse2", "avx512 ", "native"}) {
    CAPTURE(bad);
    try {
      kc::set_cpu_isa_cap(bad);
      FAIL("expected a ValueError");
    } catch (const ValueError& e) {
      check_message(e.what(), {"set_cpu_isa_cap", bad, "avx512, avx2, baseline"});
    }
    CHECK(kc::cpu_isa() == kc::cpu_isa_detected());  // unchanged
  }

  // More than the CPU has is refused, not clamped.
  if (kc::cpu_isa_detected() == CpuIsa::avx512) {
    skip_case("a cap above this CPU: it has avx512, there is none to refuse");
  } else {
    CHECK_THROWS_AS(kc::set_cpu_isa_cap("avx512"), ValueError);
    setenv("EMBER_CPU_ISA", "avx512", 1);
    try {
      kc::cpu_isa();
      FAIL("expected a ValueError");
    } catch (const ValueError& e) {
      check_message(e.what(), {"EMBER_CPU_ISA=avx512", "this CPU has only"});
    }
    unsetenv("EMBER_CPU_ISA");
  }
}

TEST_CASE("cpu isa: the API takes precedence over EMBER_CPU_ISA, and the reason says which") {
  IsaGuard guard;
  setenv("EMBER_CPU_ISA", "baseline", 1);
  CHECK(kc::cpu_isa() == CpuIsa::baseline);
  check_message(kc::cpu_isa_reason(), {"EMBER_CPU_ISA=baseline", "cpu has"});
  CHECK(kc::conv2d_implicit_gemm_isa() == nullptr);
  if (kc::cpu_isa_detected() == CpuIsa::baseline)
    return skip_case("API over the variable: no AVX2");
  kc::set_cpu_isa_cap("avx2");
  CHECK(kc::cpu_isa() == CpuIsa::avx2);
  check_message(kc::cpu_isa_reason(), {"set_cpu_isa_cap(\"avx2\")"});
  CHECK(std::string(kc::conv2d_implicit_gemm_isa()) == "avx2");
  kc::set_cpu_isa_cap("");
  CHECK(kc::cpu_isa() == CpuIsa::baseline);  // back to the variable
}

TEST_CASE("cpu isa: with the baseline cap implicit_gemm says why and another algorithm runs") {
  IsaGuard guard;
  set_cap("baseline");
  const ops::ConvKey key = ops::conv2d_key(ConvDirection::forward, {8, 16, 32, 32}, {16, 16, 3, 3},
                                           kFloat32, kCPU, conv_params(1, 1, 1, 1, 1, 1, 1));
  const ops::ConvSelection sel = ops::explain_conv_algos(key);
  const ops::ConvCandidate& ig = candidate(sel, "implicit_gemm");
  CHECK_FALSE(ig.supported);
  check_message(ig.reason, {"needs AVX2+FMA or AVX-512", "baseline"});
  // The heuristic's next best for this 3x3 layer (Winograd or im2col_gemm), never implicit_gemm.
  CHECK((!sel.chosen.empty() && sel.chosen != "implicit_gemm"));
  CHECK(candidate(sel, "im2col_gemm").supported);
  const Tensor x = ones({8, 16, 32, 32}), w = ones({16, 16, 3, 3});
  const Tensor y = ops::conv2d(x, w, Tensor(), conv_params(1, 1, 1, 1, 1, 1, 1));
  CHECK(y.to_vector<float>()[33] == doctest::Approx(144.0));  // row 1, column 1: 16 x 9 ones
  // Forcing it is an error, not a silent substitute; so is calling the kernel directly.
  ops::set_conv_algo("implicit_gemm");
  CHECK_THROWS_AS(ops::conv2d(x, w, Tensor(), conv_params(1, 1, 1, 1, 1, 1, 1)), ValueError);
  std::vector<float> out(8 * 16 * 32 * 32), ws(1 << 16);
  CHECK_THROWS_AS(
      kc::conv2d_fwd_implicit_gemm(kFloat32, key.shape, x.data_ptr(), w.data_ptr(), nullptr,
                                   out.data(), ws.data(), ws.size() * sizeof(float), nullptr),
      ValueError);
}

TEST_CASE("cpu isa: each instruction set's implicit_gemm gives the same bits run after run") {
  IsaGuard guard;
  ops::set_conv_algo("implicit_gemm");
  std::mt19937 g(fresh_seed());
  struct Shape4 {
    const char* name;
    Shape x, w;
    ops::Conv2dParams p;
  };
  // One per path: padded image copies (and the column-lanes filter gradient), the flat copies of
  // an 8-wide image, packed panels of a stride-2 layer (and strided backward data), a 1x1
  // stride-2 projection, odd sizes (packed panels, taps x filters gradient), batch 1.
  const Shape4 shapes[] = {
      {"16->16 32x32", {4, 16, 32, 32}, {16, 16, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"32->24 8x8", {4, 32, 8, 8}, {24, 32, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"16->32 16x16 s2", {4, 16, 16, 16}, {32, 16, 3, 3}, conv_params(2, 2, 1, 1, 1, 1, 1)},
      {"16->32 16x16 1x1 s2", {4, 16, 16, 16}, {32, 16, 1, 1}, conv_params(2, 2, 0, 0, 1, 1, 1)},
      {"5->10 7x9", {3, 5, 7, 9}, {10, 5, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"8->8 12x12 batch 1", {1, 8, 12, 12}, {8, 8, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1)},
  };
  for (CpuIsa isa : {CpuIsa::avx512, CpuIsa::avx2}) {
    const std::string name = kc::cpu_isa_name(isa);
    CAPTURE(name);
    if (isa > kc::cpu_isa_detected()) {
      skip_case("implicit_gemm[" + name + "] run to run: this CPU has only " +
                kc::cpu_isa_name(kc::cpu_isa_detected()));
      continue;
    }
    set_cap(name);
    CHECK(std::string(kc::conv2d_implicit_gemm_isa()) == name);
    for (const Shape4& s : shapes) {
      CAPTURE(s.name);
      const Tensor x = random_tensor(s.x, kFloat32, -1, 1, g);
      const Tensor w = random_tensor(s.w, kFloat32, -1, 1, g);
      const Tensor y = ops::conv2d(x, w, Tensor(), s.p);
      const Tensor dy = random_tensor(y.shape(), kFloat32, -1, 1, g);
      const std::vector<float> y0 = values(y);
      const std::vector<float> dx0 = values(ops::conv2d_backward_data(dy, w, s.x, s.p));
      const std::vector<float> dw0 = values(ops::conv2d_backward_filter(dy, x, s.w, s.p));
      for (int rep = 0; rep < 3; ++rep) {
        CHECK(same_bits(values(ops::conv2d(x, w, Tensor(), s.p)), y0));
        CHECK(same_bits(values(ops::conv2d_backward_data(dy, w, s.x, s.p)), dx0));
        CHECK(same_bits(values(ops::conv2d_backward_filter(dy, x, s.w, s.p)), dw0));
      }
    }
  }
}

TEST_CASE("cpu isa: implicit_gemm's estimated work on AVX2 is about twice AVX-512's") {
  IsaGuard guard;
  if (kc::cpu_isa_detected() != CpuIsa::avx512)
    return skip_case("AVX2 against AVX-512 work: this CPU has no avx512");
  const ops::ConvKey key = ops::conv2d_key(ConvDirection::forward, {8, 16, 32, 32}, {16, 16, 3, 3},
                                           kFloat32, kCPU, conv_params(1, 1, 1, 1, 1, 1, 1));
  for (ConvDirection d :
       {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter}) {
    CAPTURE(ops::conv_direction_name(d));
    set_cap("avx512");
    const double wide = kc::conv2d_implicit_gemm_work(key.shape, d);
    set_cap("avx2");
    const double narrow = kc::conv2d_implicit_gemm_work(key.shape, d);
    CHECK(narrow > 1.7 * wide);  // 8 lanes, not 16; plus the AVX2 tiles' rounding
    CHECK(narrow < 2.6 * wide);
  }
}

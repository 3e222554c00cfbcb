// conv2d: output shapes, a hand-computed example, the registry's policies, and bad input. Every
// algorithm's values in every direction on every device: tests/spec/conv2d.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>

#include "kernels/cpu/conv2d_implicit_gemm.h"
#include "kernels/cpu/cpu_isa.h"
#include "op_test_util.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "ops/elementwise.h"
#include "runtime/threads.h"
#include "skip_case.h"

using namespace ember;
using namespace ember::test;
using ops::Conv2dParams;
using ops::ConvDirection;

namespace {

// The registered algorithms that run on the cpu (every built-in one: im2col_gemm is the cpu's
// alone, direct and implicit_gemm run on every device).
std::vector<std::string> cpu_algo_names() {
  const ops::ConvKey key =
      ops::conv2d_key(ConvDirection::forward, {1, 1, 1, 1}, {1, 1, 1, 1}, kFloat32, kCPU, {});
  std::vector<std::string> names;
  for (const ops::ConvCandidate& c : ops::explain_conv_algos(key).candidates)
    if (c.backend == ops::ConvBackend::cpu && c.name != ops::kHalfFallbackAlgo)
      names.push_back(c.name);
  return names;
}

// Checks y = clamp(conv + z, -1, 1) (of dtype t) against clamp(ref.y + z, -1, 1), each element
// within the bound of its sum (the clamp moves no value further away).
void check_clamped_sum(const Tensor& y, const Tensor& z, const ConvRef& ref, DType t = kFloat32) {
  const std::vector<double> zv = z.to_vector<double>();
  std::vector<double> want(ref.y.size()), abs_sum(ref.y.size());
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] = std::min(1.0, std::max(-1.0, ref.y[i] + zv[i]));
    abs_sum[i] = ref.y_abs[i] + std::abs(zv[i]);
  }
  check_conv_close(y, kCPU, want, abs_sum, t);
}

// The residual and the clamp: conv2d_bias_add_clamp(x, w, b, z, -1, 1) against the float64 sums.
void check_residual_clamp(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& z,
                          const Conv2dParams& p, const ConvRef& ref) {
  check_clamped_sum(ops::conv2d_bias_add_clamp(x, w, b, z, p, -1.0, 1.0), z, ref);
}

// A case's random input, weight, bias and residual (y's shape), in [-1, 1], and its float64
// reference.
struct CaseData {
  Tensor x, w, b, z;
  ConvRef ref;
};
CaseData random_case(const ConvCase& cs, std::mt19937& g) {
  CaseData d;
  d.x = random_tensor({cs.n, cs.c, cs.h, cs.w}, kFloat32, -1, 1, g);
  d.w = random_tensor({cs.k, cs.c / cs.p.groups, cs.r, cs.s}, kFloat32, -1, 1, g);
  d.b = random_tensor({cs.k}, kFloat32, -1, 1, g);
  const Shape ys = ops::conv2d_output_shape(d.x.shape(), d.w.shape(), cs.p);
  d.z = random_tensor(ys, kFloat32, -1, 1, g);
  d.ref = conv_reference(cs, d.x.to_vector<double>(), d.w.to_vector<double>(),
                         d.b.to_vector<double>(), {}, ys[2], ys[3]);
  return d;
}

// Runs body(isa) with the cpu implicit GEMM forced, under each instruction set of its
// micro-kernels that this CPU has (the others reported as skipped) and on each of `threads`
// thread counts, and restores the cap, the thread count and the algorithm after.
template <typename Body>
void for_each_conv_isa(const std::string& what, std::initializer_list<int> threads, Body body) {
  ConvPolicyGuard guard;
  struct Restore {
    int n;
    ~Restore() {
      set_num_threads(n);
      kernels::cpu::set_cpu_isa_cap("");
    }
  } restore{get_num_threads()};
  ops::set_conv_algo("implicit_gemm");
  for (const kernels::cpu::CpuIsa cap :
       {kernels::cpu::CpuIsa::avx512, kernels::cpu::CpuIsa::avx2}) {
    const std::string isa = kernels::cpu::cpu_isa_name(cap);
    CAPTURE(isa);
    if (cap > kernels::cpu::cpu_isa_detected()) {
      skip_case(what + " [" + isa + "]: this CPU has only " +
                kernels::cpu::cpu_isa_name(kernels::cpu::cpu_isa_detected()));
      continue;
    }
    kernels::cpu::set_cpu_isa_cap(isa);
    ops::clear_conv_algo_cache();
    for (int nt : threads) {
      set_num_threads(nt);
      CAPTURE(nt);
      body(isa);
    }
  }
}

}  // namespace

TEST_CASE("conv2d: output shape follows PyTorch's formula") {
  // floor((H + 2p - d(R-1) - 1) / s) + 1, worked by hand.
  CHECK(ops::conv2d_output_shape({2, 3, 32, 32}, {8, 3, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1)) ==
        Shape{2, 8, 32, 32});
  CHECK(ops::conv2d_output_shape({1, 4, 7, 8}, {6, 2, 3, 3}, conv_params(2, 3, 0, 1, 1, 1, 2)) ==
        Shape{1, 6, 3, 3});
  CHECK(ops::conv2d_output_shape({1, 1, 10, 10}, {1, 1, 3, 3}, conv_params(1, 1, 0, 0, 4, 4, 1)) ==
        Shape{1, 1, 2, 2});
}

TEST_CASE("conv2d: a hand-computed example") {
  // x = 1..9 in a 3x3 image, w = [[1, 0], [0, -1]], bias 10: y[i][j] = x[i][j] - x[i+1][j+1] + 10
  // = -4 + 10 everywhere.
  std::vector<double> xv(9);
  for (int i = 0; i < 9; ++i) xv[i] = i + 1;
  const Tensor x = from_vector(xv, {1, 1, 3, 3});
  const Tensor w = from_vector(std::vector<double>{1, 0, 0, -1}, {1, 1, 2, 2});
  const Tensor b = from_vector(std::vector<double>{10}, {1});
  check_values(ops::conv2d(x, w, b, {}), {6, 6, 6, 6}, kFloat64);
}

TEST_CASE("conv2d registry: forced algorithm, unknown name, environment variable") {
  ConvPolicyGuard guard;
  const ConvDirection fwd = ConvDirection::forward;
  const ops::ConvKey key = ops::conv2d_key(fwd, {2, 3, 8, 8}, {4, 3, 3, 3}, kFloat32, kCPU, {});
  for (const std::string& name : cpu_algo_names()) {
    ops::set_conv_algo(name);
    CHECK(ops::forced_conv_algo() == name);
    const ops::ConvSelection sel = ops::explain_conv_algos(key);
    CHECK(sel.policy == ops::ConvPolicy::forced);
    bool skipped = false;
    for (const ops::ConvCandidate& c : sel.candidates)
      if (c.name == name && built_without_instructions(c)) {
        skip_case("forcing " + name + ": " + c.reason);
        skipped = true;
      }
    if (!skipped) CHECK(sel.chosen == name);
  }
  try {
    ops::set_conv_algo("winograd_9000");
    FAIL("expected a ValueError");
  } catch (const ValueError& e) {
    check_message(e.what(), {"winograd_9000", "im2col_gemm", "direct"});
  }
  // Forcing the half fallback forces half keys only (Note [Half convolutions]).
  ops::set_conv_algo(ops::kHalfFallbackAlgo);
  CHECK(ops::explain_conv_algos(key).policy == ops::ConvPolicy::heuristic);
  ops::set_conv_algo("");
  setenv("EMBER_CONV_ALGO", "direct", 1);
  CHECK(ops::forced_conv_algo() == "direct");
  CHECK(ops::explain_conv_algos(key).chosen == "direct");
  setenv("EMBER_CONV_ALGO", "no_such_algo", 1);
  const Tensor x = ones({2, 3, 8, 8}), w = ones({4, 3, 3, 3});
  try {
    ops::conv2d(x, w, Tensor(), {});
    FAIL("expected a ValueError");
  } catch (const ValueError& e) {
    check_message(e.what(), {"no_such_algo", "im2col_gemm", "direct"});
  }
  unsetenv("EMBER_CONV_ALGO");
  const ops::ConvSelection sel = ops::explain_conv_algos(key);
  CHECK(sel.policy == ops::ConvPolicy::heuristic);
  CHECK(!sel.chosen.empty());
  for (const ops::ConvCandidate& c : sel.candidates) {
    // Every cpu algorithm takes a plain float32 convolution, unless the build lacks its
    // instructions or it is a half one; the GPU ones refuse a cpu key.
    if (c.name == ops::kHalfFallbackAlgo) {
      CHECK_FALSE(c.supported);
      check_message(c.reason, {"float16 and bfloat16 only"});
    } else if (c.backend == ops::ConvBackend::cpu) {
      if (built_without_instructions(c))
        skip_case(c.name + " on a plain float32 convolution: " + c.reason);
      else
        CHECK(c.supported);
    } else {
      CHECK_FALSE(c.supported);
      check_message(c.reason, {"not supported", c.backend == ops::ConvBackend::cudnn ||
                                                        c.backend == ops::ConvBackend::cudnn_legacy
                                                    ? "cuda devices only"
                                                    : "cuda and emu"});
    }
    CHECK(c.chosen == (c.name == sel.chosen));
    CHECK(!c.reason.empty());
  }
}

TEST_CASE("conv2d registry: heuristic, deterministic policy and fallback") {
  ConvPolicyGuard guard;
  // A fake algorithm that claims to be the fastest, is not deterministic, supports only
  // float64, and gives up at run time: selection must rank it first under the heuristic, skip it
  // under the deterministic policy, and fall back past it when it throws.
  int runs = 0;
  struct Flaky final : ops::ConvAlgo {
    int* runs;
    explicit Flaky(int* r) : ConvAlgo("test_flaky", /*deterministic=*/false), runs(r) {}
    ops::ConvBackend backend(DeviceType) const override { return ops::ConvBackend::cpu; }
    bool supports(const ops::ConvKey& k, std::string* why) const override {
      if (k.dtype != kFloat64) return *why = "float64 only", false;
      return true;
    }
    size_t workspace_bytes(const ops::ConvKey&) const override { return 0; }
    double cost(const ops::ConvKey&) const override { return -1.0; }
    void run_forward(const ops::ConvKey&, const void*, const void*, const void*, void*,
                     ops::ConvWorkspace) const override {
      ++*runs;
      throw ops::ConvNotSupported("test_flaky: not today");
    }
    void run_backward_data(const ops::ConvKey&, const void*, const void*, void*,
                           ops::ConvWorkspace) const override {
      throw ops::ConvNotSupported("test_flaky: forward only");
    }
    void run_backward_filter(const ops::ConvKey&, const void*, const void*, void*,
                             ops::ConvWorkspace) const override {
      throw ops::ConvNotSupported("test_flaky: forward only");
    }
  };
  const auto fake = std::make_shared<const Flaky>(&runs);
  ops::register_conv_algo(fake);
  struct Unregister {
    ~Unregister() { ops::unregister_conv_algo("test_flaky"); }
  } unregister;
  CHECK_THROWS_AS(ops::register_conv_algo(fake), ValueError);

  const Shape xs{1, 2, 5, 5}, ws{3, 2, 3, 3};
  const auto k64 = ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat64, kCPU, {});
  const auto k32 = ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, kCPU, {});
  CHECK(ops::explain_conv_algos(k64).chosen == "test_flaky");
  const ops::ConvSelection s32 = ops::explain_conv_algos(k32);
  CHECK(s32.chosen != "test_flaky");
  for (const auto& c : s32.candidates)
    if (c.name == "test_flaky") {
      CHECK_FALSE(c.supported);
      check_message(c.reason, {"not supported", "float64 only"});
    }

  // Fallback: the flaky one is tried, throws, and the next one gives the right answer.
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Tensor x = random_tensor(xs, kFloat64, -1, 1, g), w = random_tensor(ws, kFloat64, -1, 1, g);
  const ConvCase cs{"fallback", 1, 2, 5, 5, 3, 3, 3, {}};
  const ConvRef ref =
      conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(), {}, {}, 3, 3);
  check_conv_close(ops::conv2d(x, w, Tensor(), {}), kCPU, ref.y, ref.y_abs, kFloat64);
  CHECK(runs == 1);

  // Deterministic policy: the flag is part of the key, and the flaky one is not a candidate.
  ops::set_conv_deterministic(true);
  const auto kdet = ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat64, kCPU, {});
  CHECK(kdet != k64);
  const ops::ConvSelection sdet = ops::explain_conv_algos(kdet);
  CHECK(sdet.policy == ops::ConvPolicy::deterministic);
  CHECK(sdet.chosen != "test_flaky");
  for (const auto& c : sdet.candidates)
    if (c.name == "test_flaky") {
      CHECK(c.rank == -1);
      CHECK(c.reason == "not deterministic");
    }
  check_conv_close(ops::conv2d(x, w, Tensor(), {}), kCPU, ref.y, ref.y_abs, kFloat64);
  CHECK(runs == 1);
  // Forcing a non-deterministic algorithm under the deterministic policy is refused.
  ops::set_conv_algo("test_flaky");
  CHECK_THROWS_AS(ops::conv2d(x, w, Tensor(), {}), ValueError);
}

TEST_CASE("conv2d registry: keys compare and hash by every field") {
  const Shape xs{2, 4, 9, 9}, ws{6, 2, 3, 3};
  const Conv2dParams p = conv_params(1, 1, 1, 1, 1, 1, 2);
  const auto a = ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, kCPU, p);
  const auto b = ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, kCPU, p);
  CHECK(a == b);
  CHECK(ops::ConvKeyHash{}(a) == ops::ConvKeyHash{}(b));
  std::vector<ops::ConvKey> others = {
      ops::conv2d_key(ConvDirection::backward_data, xs, ws, kFloat32, kCPU, p),
      ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat64, kCPU, p),
      ops::conv2d_key(ConvDirection::forward, {3, 4, 9, 9}, ws, kFloat32, kCPU, p),
      ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, kCPU,
                      conv_params(2, 1, 1, 1, 1, 1, 2)),
      ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, kCPU,
                      conv_params(1, 1, 1, 1, 1, 2, 2)),
      ops::conv2d_key(ConvDirection::forward, xs, ws, kFloat32, Device(DeviceType::EMU, 0), p),
  };
  for (const auto& o : others) {
    CHECK(o != a);
    CHECK(ops::ConvKeyHash{}(o) != ops::ConvKeyHash{}(a));
  }
  CHECK(ops::conv_key_string(a).find("groups 2") != std::string::npos);
}

TEST_CASE("conv2d: bad input raises typed errors naming the op and shapes") {
  const Tensor x = ones({2, 4, 8, 8}), w = ones({6, 2, 3, 3});
  const Conv2dParams g2 = conv_params(1, 1, 0, 0, 1, 1, 2);
  auto expect = [](auto&& f, std::initializer_list<std::string> parts) {
    try {
      f();
      FAIL("expected an error");
    } catch (const Error& e) {
      check_message(e.what(), parts);
    }
  };
  CHECK_THROWS_AS(ops::conv2d(ones({4, 8, 8}), w, Tensor(), g2), ShapeError);
  CHECK_THROWS_AS(ops::conv2d_bias_clamp(x, w, Tensor(), g2, 6.0, 0.0), ValueError);
  expect([&] { ops::conv2d_bias_clamp(x, w, Tensor(), g2, 0.0, std::nan("")); },
         {"conv2d_bias_clamp", "lo <= hi", "nan"});
  expect([&] { ops::conv2d(ones({4, 8, 8}), w, Tensor(), g2); }, {"conv2d", "4-D", "[4, 8, 8]"});
  CHECK_THROWS_AS(ops::conv2d(x, ones({6, 3, 3, 3}), Tensor(), g2), ShapeError);
  expect(
      [&] {
        ops::conv2d(x, ones({6, 3, 3, 3}), Tensor(), g2);
      },
      {"conv2d", "[2, 4, 8, 8]", "[6, 3, 3, 3]"});
  CHECK_THROWS_AS(ops::conv2d(x, ones({6, 1, 3, 3}), Tensor(), conv_params(1, 1, 0, 0, 1, 1, 3)),
                  ShapeError);  // 3 does not divide C=4
  expect(
      [&] {
        ops::conv2d(x, ones({5, 2, 3, 3}), Tensor(), g2);
      },
      {"conv2d", "not divisible", "[5, 2, 3, 3]"});  // 2 does not divide K=5
  CHECK_THROWS_AS(ops::conv2d(x, ones({5, 2, 3, 3}), Tensor(), g2), ShapeError);
  CHECK_THROWS_AS(ops::conv2d(x, ones({6, 2, 9, 3}), Tensor(), g2), ShapeError);
  expect(
      [&] {
        ops::conv2d(x, ones({6, 2, 5, 5}), Tensor(), conv_params(1, 1, 0, 0, 2, 2, 2));
      },
      {"conv2d", "larger than the padded input", "[6, 2, 5, 5]"});
  CHECK_NOTHROW(ops::conv2d(x, ones({6, 2, 9, 3}), Tensor(), conv_params(1, 1, 1, 0, 1, 1, 2)));
  CHECK_THROWS_AS(ops::conv2d(x, w, Tensor(), conv_params(0, 1, 0, 0, 1, 1, 2)), ValueError);
  CHECK_THROWS_AS(ops::conv2d(x, w, Tensor(), conv_params(1, -1, 0, 0, 1, 1, 2)), ValueError);
  CHECK_THROWS_AS(ops::conv2d(x, w, Tensor(), conv_params(1, 1, -1, 0, 1, 1, 2)), ValueError);
  CHECK_THROWS_AS(ops::conv2d(x, w, Tensor(), conv_params(1, 1, 0, 0, 0, 1, 2)), ValueError);
  CHECK_THROWS_AS(ops::conv2d(x, w, Tensor(), conv_params(1, 1, 0, 0, 1, 1, 0)), ValueError);
  CHECK_THROWS_AS(ops::conv2d(x, w.to(kFloat64), Tensor(), g2), DTypeError);
  expect([&] { ops::conv2d(x, w.to(kFloat64), Tensor(), g2); }, {"conv2d", "float32", "float64"});
  CHECK_THROWS_AS(ops::conv2d(x.to(kInt32), w.to(kInt32), Tensor(), g2), DTypeError);
  CHECK_THROWS_AS(ops::conv2d(x, w, ones({5}), g2), ShapeError);
  expect([&] { ops::conv2d(x, w, ones({5}), g2); }, {"conv2d", "bias", "[5]", "[6]"});
  CHECK_THROWS_AS(ops::conv2d(x, w, ones({6}, kFloat64), g2), DTypeError);
  const Tensor xe = fake_device_tensor({2, 4, 8, 8}, kFloat32, Device(DeviceType::EMU, 0));
  CHECK_THROWS_AS(ops::conv2d(xe, w, Tensor(), g2), DeviceError);
  expect([&] { ops::conv2d(xe, w, Tensor(), g2); }, {"conv2d", "emu:0", "cpu"});
  const Tensor dy = ones({2, 6, 6, 6});
  // A residual must be y's [2, 6, 6, 6] exactly, of x's dtype and device.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_NOTHROW(ops::conv2d_bias_add_clamp(x, w, Tensor(), dy, g2, 0.0, inf));
  expect([&] { ops::conv2d_bias_add_clamp(x, w, Tensor(), ones({6, 1, 1}), g2, 0.0, inf); },
         {"conv2d_bias_add_clamp", "residual", "[2, 6, 6, 6]", "[6, 1, 1]"});
  CHECK_THROWS_AS(ops::conv2d_bias_add_clamp(x, w, Tensor(), ones({6, 1, 1}), g2, 0.0, inf),
                  ShapeError);
  CHECK_THROWS_AS(ops::conv2d_bias_add_clamp(x, w, Tensor(), dy.to(kFloat64), g2, 0.0, inf),
                  DTypeError);
  const Tensor dye = fake_device_tensor({2, 6, 6, 6}, kFloat32, Device(DeviceType::EMU, 0));
  CHECK_THROWS_AS(ops::conv2d_bias_add_clamp(x, w, Tensor(), dye, g2, 0.0, inf), DeviceError);
  expect([&] { ops::conv2d_bias_add_clamp(x, w, Tensor(), Tensor(), g2, 0.0, inf); },
         {"conv2d_bias_add_clamp", "residual", "undefined"});
  expect([&] { ops::conv2d_bias_add_clamp(x, w, Tensor(), dy, g2, 1.0, 0.0); },
         {"conv2d_bias_add_clamp", "lo <= hi"});
  CHECK_THROWS_AS(ops::conv2d_backward_data(ones({2, 6, 5, 6}), w, x.shape(), g2), ShapeError);
  CHECK_THROWS_AS(ops::conv2d_backward_filter(ones({2, 6, 5, 6}), x, w.shape(), g2), ShapeError);
  CHECK_THROWS_AS(ops::conv2d_backward_filter(dy, x.to(kFloat64), w.shape(), g2), DTypeError);
  CHECK_NOTHROW(ops::conv2d_backward_data(dy, w, x.shape(), g2));
}

TEST_CASE("conv2d: empty batch") {
  const Tensor y = ops::conv2d(ones({0, 3, 5, 5}), ones({2, 3, 3, 3}), Tensor(), {});
  CHECK(y.shape() == Shape{0, 2, 3, 3});
  const Tensor dw =
      ops::conv2d_backward_filter(ones({0, 2, 3, 3}), ones({0, 3, 5, 5}), {2, 3, 3, 3}, {});
  check_values(dw, std::vector<double>(54, 0.0), kFloat32);
}

TEST_CASE("conv2d: filters packed once give the same outputs as packed per call") {
  // The implicit GEMM reads the packed filters where it runs (forced here), on every shape that
  // exercises the packing: whole blocks and a last part block, groups, taps not a multiple of 8.
  ConvPolicyGuard guard;
  if (kernels::cpu::conv2d_implicit_gemm_isa() == nullptr) {
    skip_case("conv2d packed filters: this CPU has no implicit-GEMM micro-kernels");
    return;
  }
  ops::set_conv_algo("implicit_gemm");
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  struct Case {
    int64_t n, c, h, k, r, groups;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const Case& cs : {Case{1, 64, 8, 64, 3, 1}, Case{2, 3, 9, 13, 3, 1},
                         Case{1, 16, 7, 24, 1, 1}, Case{3, 8, 6, 12, 3, 4},
                         Case{1, 5, 11, 7, 5, 1}}) {
    CAPTURE(cs.c);
    CAPTURE(cs.k);
    const Tensor x = random_tensor({cs.n, cs.c, cs.h, cs.h}, kFloat32, -1, 1, g);
    const Tensor w = random_tensor({cs.k, cs.c / cs.groups, cs.r, cs.r}, kFloat32, -1, 1, g);
    const Tensor b = random_tensor({cs.k}, kFloat32, -1, 1, g);
    const Conv2dParams p = conv_params(1, 1, cs.r / 2, cs.r / 2, 1, 1, cs.groups);
    const ops::PackedConv2dFilters packed = ops::pack_conv2d_filters(w, p);
    REQUIRE(packed.data.defined());
    CHECK(packed.isa == kernels::cpu::conv2d_implicit_gemm_isa());
    const Tensor z = random_tensor(ops::conv2d_output_shape(x.shape(), w.shape(), p), kFloat32,
                                   -1, 1, g);
    CHECK(ops::conv2d_bias_clamp(x, w, b, p, -0.5, 0.5, &packed).to_vector<float>() ==
          ops::conv2d_bias_clamp(x, w, b, p, -0.5, 0.5).to_vector<float>());
    CHECK(ops::conv2d_bias_relu(x, w, b, p, &packed).to_vector<float>() ==
          ops::conv2d_bias_relu(x, w, b, p).to_vector<float>());
    CHECK(ops::conv2d_bias_add_clamp(x, w, b, z, p, -inf, inf, &packed).to_vector<float>() ==
          ops::conv2d_bias_add_clamp(x, w, b, z, p, -inf, inf).to_vector<float>());
    // Packed for other micro-kernels (EMBER_CPU_ISA changed since): w is packed as usual.
    ops::PackedConv2dFilters other = packed;
    other.isa = "another";
    other.data = zeros(packed.data.shape());
    if (other.lanes_data.defined()) {
      other.lanes_isa = "another-lanes";
      other.lanes_data = zeros(packed.lanes_data.shape());
    }
    CHECK(ops::conv2d_bias_clamp(x, w, b, p, -inf, inf, &other).to_vector<float>() ==
          ops::conv2d(x, w, b, p).to_vector<float>());
    // Packed for another filter shape: an error, never another layer's filters.
    const Tensor w2 = random_tensor({cs.k + 1, cs.c / cs.groups, cs.r, cs.r}, kFloat32, -1, 1, g);
    const ops::PackedConv2dFilters wrong =
        ops::pack_conv2d_filters(w2, conv_params(1, 1, 0, 0, 1, 1, 1));
    CHECK_THROWS_WITH_AS(ops::conv2d_bias_relu(x, w, b, p, &wrong),
                         doctest::Contains("packed filters are of shape"), ValueError);
    // Packed for another stride (a layout of its own where it takes the filters in lanes): w
    // is packed as usual.
    const ops::PackedConv2dFilters strided =
        ops::pack_conv2d_filters(w, conv_params(2, 2, cs.r / 2, cs.r / 2, 1, 1, cs.groups));
    CHECK(ops::conv2d_bias_relu(x, w, b, p, &strided).to_vector<float>() ==
          ops::conv2d_bias_relu(x, w, b, p).to_vector<float>());
  }
  // Nothing to pack off the cpu's float32; bad weights are errors.
  CHECK_FALSE(ops::pack_conv2d_filters(ones({4, 2, 3, 3}, kFloat64), {}).data.defined());
  CHECK_THROWS_AS(ops::pack_conv2d_filters(ones({4, 2, 3}), {}), ShapeError);
  CHECK_THROWS_AS(ops::pack_conv2d_filters(ones({5, 2, 3, 3}), conv_params(1, 1, 0, 0, 1, 1, 2)),
                  ShapeError);
}

TEST_CASE("conv2d: threads sharing each image of a batch smaller than the thread count") {
  // Batches of 1 to 3 images on 4 threads: the cpu implicit GEMM's threads split each image's
  // panels, each copying the rows they read (Note [Fewer images than threads]; on 8 x 8 two of
  // the four have no panel), image after image; against the float64 loops, with bias, clamp and
  // residual.
  ConvPolicyGuard guard;
  if (kernels::cpu::conv2d_implicit_gemm_isa() == nullptr) {
    skip_case("conv2d shared images: this CPU has no implicit-GEMM micro-kernels");
    return;
  }
  ops::set_conv_algo("implicit_gemm");
  const int threads = get_num_threads();
  struct Restore {
    int n;
    ~Restore() { set_num_threads(n); }
  } restore{threads};
  set_num_threads(4);
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  // Rows of 16 (the padded layout) and 8 x 8 (flat copies, one per filter column), each large
  // enough for several threads.
  for (const ConvCase& cs :
       {ConvCase{"rows of 16", 3, 24, 16, 16, 40, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
        ConvCase{"8 x 8, 2 images", 2, 64, 8, 8, 64, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
        ConvCase{"8 x 8, 1 image", 1, 64, 8, 8, 64, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)}}) {
    const std::string name = cs.name;
    CAPTURE(name);
    const auto [x, w, b, z, ref] = random_case(cs, g);
    check_conv_close(ops::conv2d(x, w, b, cs.p), kCPU, ref.y, ref.y_abs, kFloat32);
    check_residual_clamp(x, w, b, z, cs.p, ref);
  }
}

TEST_CASE("conv2d: filters in lanes for strided layers, on one thread and sharing images") {
  // The forward with 32 filters in the AVX-512 vector lanes (Note [Filters in lanes] in
  // kernels/cpu/conv2d_implicit_gemm_lanes.cpp), and the panels it replaces under AVX2, under each
  // instruction set this CPU has:
  // stride 2 in both dims or in rows only, a stride-1 image with no copy layout, output rows
  // of 7, 10, 14 and 16 columns (whole tiles and a remainder), dilation, padding 0 and 2,
  // batches of 1 and 3 on one and four threads (the output rows split, or the images, or at
  // batch 1 with at least a filter block per thread the blocks, unevenly: Note [Lanes split at
  // batch 1]), bias, clamp, residual, and filters packed once; against the float64 loops.
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const double inf = std::numeric_limits<double>::infinity();
  for_each_conv_isa("conv2d filters in lanes", {1, 4}, [&](const std::string& isa) {
    for (const ConvCase& cs :
         {ConvCase{"3x3 s2, 13 x 13", 3, 16, 13, 13, 32, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 1)},
          ConvCase{"3x3 s2, 1 image", 1, 24, 20, 19, 64, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 1)},
          ConvCase{"5x3 s(2,1) pad 2", 3, 8, 11, 16, 32, 5, 3, conv_params(2, 1, 2, 2, 1, 1, 1)},
          ConvCase{"3x3 s1, 14 x 14", 2, 16, 14, 14, 32, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
          ConvCase{"3x3 s2 dil 2 pad 0", 1, 5, 21, 23, 32, 3, 3,
                   conv_params(2, 2, 0, 0, 2, 2, 1)},
          ConvCase{"3x3 s2, 1 image, 5 filter blocks", 1, 16, 16, 15, 160, 3, 3,
                   conv_params(2, 2, 1, 1, 1, 1, 1)},
          ConvCase{"3x3 s1, 8 x 8, 1 image, 5 filter blocks", 1, 32, 8, 8, 160, 3, 3,
                   conv_params(1, 1, 1, 1, 1, 1, 1)}}) {
      const std::string name = cs.name;
      CAPTURE(name);
      const auto [x, w, b, z, ref] = random_case(cs, g);
      check_conv_close(ops::conv2d(x, w, b, cs.p), kCPU, ref.y, ref.y_abs, kFloat32);
      check_residual_clamp(x, w, b, z, cs.p, ref);
      std::vector<double> relu(ref.y.size());
      for (size_t i = 0; i < relu.size(); ++i) relu[i] = std::max(0.0, ref.y[i]);
      const ops::PackedConv2dFilters packed = ops::pack_conv2d_filters(w, cs.p);
      // At stride 1 the packing cannot know the image size: it packs for the copy layouts, and
      // for the filters in lanes too (AVX-512 only); the forward takes the one it needs.
      const bool avx512 = isa == "avx512", strided = cs.p.stride[0] != 1;
      CHECK(packed.isa == (avx512 && strided ? isa + "-lanes" : isa));
      CHECK(packed.lanes_isa == (avx512 && !strided ? isa + "-lanes" : ""));
      CHECK(packed.lanes_data.defined() == (avx512 && !strided));
      const Tensor relu_packed = ops::conv2d_bias_relu(x, w, b, cs.p, &packed);
      check_conv_close(relu_packed, kCPU, relu, ref.y_abs, kFloat32);
      CHECK(relu_packed.to_vector<float>() ==
            ops::conv2d_bias_relu(x, w, b, cs.p).to_vector<float>());
      CHECK(ops::conv2d_bias_add_clamp(x, w, b, z, cs.p, -inf, inf, &packed).to_vector<float>() ==
            ops::conv2d_bias_add_clamp(x, w, b, z, cs.p, -inf, inf).to_vector<float>());
    }
  });
}

TEST_CASE("conv2d: residual sums on each of the implicit GEMM's store paths") {
  // clamp(conv + bias + z) as the micro-kernels store a block (in place, or a block of fewer
  // filters through a tile), and image by image where the output planes lie 4 KiB apart (Note
  // [Skewed planes]), under each instruction set this CPU has, on one and two threads; against
  // the float64 loops.
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const double inf = std::numeric_limits<double>::infinity();
  for_each_conv_isa("conv2d residual sums", {1, 2}, [&](const std::string&) {
    for (const ConvCase& cs :
         {ConvCase{"32 x 32 planes, image by image", 2, 8, 32, 32, 16, 3, 3,
                   conv_params(1, 1, 1, 1, 1, 1, 1)},
          ConvCase{"16 x 16, 24 filters", 3, 8, 16, 16, 24, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
          ConvCase{"16 x 16, 13 filters", 2, 5, 16, 16, 13, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
          ConvCase{"panels, 7 x 9", 2, 6, 7, 9, 16, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
          ConvCase{"panels, stride 2, 20 filters", 2, 4, 15, 17, 20, 3, 3,
                   conv_params(2, 2, 1, 1, 1, 1, 1)}}) {
      const std::string name = cs.name;
      CAPTURE(name);
      const auto [x, w, b, z, ref] = random_case(cs, g);
      check_residual_clamp(x, w, b, z, cs.p, ref);
      // The sum is rounded once, as conv2d then add round it.
      const Tensor sum = ops::add(ops::conv2d(x, w, b, cs.p), z);
      CHECK(ops::conv2d_bias_add_clamp(x, w, b, z, cs.p, -inf, inf).to_vector<float>() ==
            sum.to_vector<float>());
    }
  });
}

TEST_CASE("conv2d: a prepared forward runs as conv2d_bias_add_clamp, and only as prepared") {
  // Note [Prepared convolutions]: the values against the float64 loops and bit for bit against
  // the call it stands for; every difference from what was prepared (x, the filters, the bias,
  // the residual, the registry's choice) refused, nothing run.
  ConvPolicyGuard guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const double inf = std::numeric_limits<double>::infinity();
  const ConvCase cs{"8 channels, 9 x 7, 12 filters", 2, 8, 9, 7, 12, 3, 3,
                    conv_params(1, 1, 1, 1, 1, 1, 1)};
  const auto [x, w, b, z, ref] = random_case(cs, g);
  const ops::PackedConv2dFilters packed = ops::pack_conv2d_filters(w, cs.p);
  using PackedPtr = const ops::PackedConv2dFilters*;
  for (PackedPtr pk : std::initializer_list<PackedPtr>{&packed, nullptr}) {
    CAPTURE(pk != nullptr);
    // With the residual, clamped: the float64 sums, and conv2d_bias_add_clamp's bits.
    const auto with_z = ops::prepare_conv2d(x, w, b, z, cs.p, -1.0, 1.0, pk);
    REQUIRE(with_z);
    const Tensor y = ops::run_prepared_conv2d(*with_z, x, w, b, z);
    REQUIRE(y.defined());
    check_clamped_sum(y, z, ref);
    CHECK(y.to_vector<float>() ==
          ops::conv2d_bias_add_clamp(x, w, b, z, cs.p, -1.0, 1.0, pk).to_vector<float>());
    // Run again: the same bits.
    CHECK(ops::run_prepared_conv2d(*with_z, x, w, b, z).to_vector<float>() == y.to_vector<float>());
    // Without a residual or a bias, unclamped: conv2d's bits.
    const auto plain = ops::prepare_conv2d(x, w, Tensor(), Tensor(), cs.p, -inf, inf, pk);
    REQUIRE(plain);
    CHECK(ops::run_prepared_conv2d(*plain, x, w, Tensor(), Tensor()).to_vector<float>() ==
          ops::conv2d(x, w, Tensor(), cs.p).to_vector<float>());
    // Refused: another x shape, a strided x, other filters of the same values, the filters'
    // memory read transposed, another bias or none, a residual missing or of another shape, one
    // where none was prepared.
    const Tensor x_other = random_tensor({1, cs.c, cs.h, cs.w}, kFloat32, -1, 1, g);
    const Tensor x_strided = x.transpose(2, 3).contiguous().transpose(2, 3);
    CHECK_FALSE(ops::run_prepared_conv2d(*with_z, x_other, w, b, z).defined());
    CHECK_FALSE(ops::run_prepared_conv2d(*with_z, x_strided, w, b, z).defined());
    CHECK_FALSE(ops::run_prepared_conv2d(*with_z, x, w.clone(), b, z).defined());
    CHECK_FALSE(ops::run_prepared_conv2d(*with_z, x, w.transpose(2, 3), b, z).defined());
    CHECK_FALSE(ops::run_prepared_conv2d(*with_z, x, w, b.clone(), z).defined());
    CHECK_FALSE(ops::run_prepared_conv2d(*with_z, x, w, Tensor(), z).defined());
    CHECK_FALSE(ops::run_prepared_conv2d(*with_z, x, w, b, Tensor()).defined());
    CHECK_FALSE(ops::run_prepared_conv2d(*with_z, x, w, b, z.view({-1})).defined());
    CHECK_FALSE(ops::run_prepared_conv2d(*plain, x, w, Tensor(), z).defined());
  }
  // The registry's choice moved: forced through the API or the environment, the policy
  // changed, the rankings cleared. Each refuses until it is what the preparation saw again.
  const auto prepared = ops::prepare_conv2d(x, w, b, z, cs.p, -inf, inf, &packed);
  REQUIRE(prepared);
  auto runs = [&] { return ops::run_prepared_conv2d(*prepared, x, w, b, z).defined(); };
  CHECK(runs());
  ops::set_conv_algo("direct");
  CHECK_FALSE(runs());
  ops::set_conv_algo("");
  CHECK(runs());
  setenv("EMBER_CONV_ALGO", "direct", 1);
  CHECK_FALSE(runs());
  unsetenv("EMBER_CONV_ALGO");
  CHECK(runs());
  ops::set_conv_deterministic(true);
  CHECK_FALSE(runs());
  ops::set_conv_deterministic(false);
  CHECK(runs());
  setenv("EMBER_CONV_POLICY", "benchmark", 1);
  CHECK_FALSE(runs());
  unsetenv("EMBER_CONV_POLICY");
  CHECK(runs());
  ops::clear_conv_algo_cache();
  CHECK_FALSE(runs());
  const auto again = ops::prepare_conv2d(x, w, b, z, cs.p, -inf, inf, &packed);
  REQUIRE(again);
  CHECK(ops::run_prepared_conv2d(*again, x, w, b, z).to_vector<float>() ==
        ops::conv2d_bias_add_clamp(x, w, b, z, cs.p, -inf, inf).to_vector<float>());
  // Prepared under one instruction set, run under another (EMBER_CPU_ISA or the cap changed
  // since): the registry's choice stands, and the micro-kernels pack w themselves.
  struct ClearCap {
    ~ClearCap() { kernels::cpu::set_cpu_isa_cap(""); }
  } clear_cap;
  if (kernels::cpu::cpu_isa_detected() < kernels::cpu::CpuIsa::avx512) {
    skip_case("conv2d prepared under avx512, run under avx2: this CPU has only " +
              std::string(kernels::cpu::cpu_isa_name(kernels::cpu::cpu_isa_detected())));
  } else {
    ops::set_conv_algo("implicit_gemm");
    kernels::cpu::set_cpu_isa_cap("avx512");  // whatever EMBER_CPU_ISA says
    const ops::PackedConv2dFilters wide_packed = ops::pack_conv2d_filters(w, cs.p);
    CHECK(wide_packed.isa == "avx512");
    const auto wide = ops::prepare_conv2d(x, w, b, z, cs.p, -1.0, 1.0, &wide_packed);
    REQUIRE(wide);
    kernels::cpu::set_cpu_isa_cap("avx2");
    const Tensor y = ops::run_prepared_conv2d(*wide, x, w, b, z);
    REQUIRE(y.defined());
    check_clamped_sum(y, z, ref);
    CHECK(y.to_vector<float>() ==
          ops::conv2d_bias_add_clamp(x, w, b, z, cs.p, -1.0, 1.0).to_vector<float>());
    kernels::cpu::set_cpu_isa_cap("");
    ops::set_conv_algo("");
  }
  // float64: the float64 sums, at float64's tolerance.
  const Tensor x64 = x.to(kFloat64), w64 = w.to(kFloat64), b64 = b.to(kFloat64);
  const Tensor z64 = z.to(kFloat64);
  const auto prepared64 = ops::prepare_conv2d(x64, w64, b64, z64, cs.p, -1.0, 1.0);
  REQUIRE(prepared64);
  check_clamped_sum(ops::run_prepared_conv2d(*prepared64, x64, w64, b64, z64), z, ref, kFloat64);
  CHECK_FALSE(ops::run_prepared_conv2d(*prepared64, x, w64, b64, z64).defined());
  // Not prepared: off the cpu, half dtypes, an empty batch. Bad input: conv2d_bias_add_clamp's
  // errors.
  const Device emu(DeviceType::EMU, 0);
  CHECK_FALSE(ops::prepare_conv2d(x.to(emu), w.to(emu), b.to(emu), Tensor(), cs.p, 0, inf));
  CHECK_FALSE(ops::prepare_conv2d(x.to(kFloat16), w.to(kFloat16), Tensor(), Tensor(), cs.p, 0,
                                  inf));
  CHECK_FALSE(ops::prepare_conv2d(zeros({0, cs.c, cs.h, cs.w}), w, b, Tensor(), cs.p, 0, inf));
  CHECK_THROWS_AS(ops::prepare_conv2d(x, w, b, z.view({-1}), cs.p, 0, inf), ShapeError);
  CHECK_THROWS_AS(ops::prepare_conv2d(x, w.to(kFloat64), b, Tensor(), cs.p, 0, inf), DTypeError);
  CHECK_THROWS_AS(ops::prepare_conv2d(x, w, b, Tensor(), cs.p, 1.0, 0.0), ValueError);
}

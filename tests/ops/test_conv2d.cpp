// conv2d: every registered algorithm in every direction against naive float64 loops written
// here, on odd shapes and strided inputs; the registry's policies; and bad input.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "op_test_util.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "skip_case.h"

using namespace ember;
using namespace ember::test;
using ops::Conv2dParams;
using ops::ConvDirection;

namespace {

const std::vector<ConvCase>& cases() {
  static const std::vector<ConvCase> c = {
      {"3x3 plain", 2, 3, 7, 6, 5, 3, 3, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"batch 1, 1x1 pointwise", 1, 5, 4, 9, 7, 1, 1, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"1x1 stride 2", 3, 4, 7, 5, 3, 1, 1, conv_params(2, 2, 0, 0, 1, 1, 1)},
      {"5x5 padding 2", 2, 3, 9, 8, 4, 5, 5, conv_params(1, 1, 2, 2, 1, 1, 1)},
      {"3x3 stride 2 pad 1", 3, 6, 11, 10, 5, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 1)},
      {"dilation 2", 2, 3, 10, 9, 4, 3, 3, conv_params(1, 1, 2, 1, 2, 2, 1)},
      {"groups 2", 2, 6, 7, 7, 4, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 2)},
      {"depthwise", 2, 5, 8, 6, 5, 3, 3, conv_params(2, 1, 1, 1, 1, 1, 5)},
      {"depthwise multiplier 2", 1, 3, 6, 7, 6, 3, 2, conv_params(1, 2, 1, 0, 1, 1, 3)},
      {"asymmetric everything", 5, 9, 13, 11, 10, 3, 5, conv_params(2, 3, 1, 2, 2, 1, 1)},
      {"batch 17 (more images than threads)", 17, 3, 6, 5, 4, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1)},
      // Rows wider than one 32-column panel, filter counts off the 8/16/64 tiles, panels that
      // span images, and padding larger than the filter.
      {"wide rows, 21 filters", 2, 5, 37, 40, 21, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"70 filters, 5x5 padding 2", 3, 7, 7, 9, 70, 5, 5, conv_params(1, 1, 2, 2, 1, 1, 1)},
      {"1x1 padding 2", 2, 3, 5, 6, 4, 1, 1, conv_params(1, 1, 2, 2, 1, 1, 1)},
      // Output rows a multiple of 16 wide (the cpu implicit_gemm reads padded images directly),
      // with a last panel half full, dilation, groups and padding beyond the filter.
      {"rows of 32", 2, 5, 9, 32, 13, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"rows of 16, odd height", 3, 7, 5, 16, 10, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"rows of 16, dilation 2", 1, 3, 12, 16, 9, 3, 3, conv_params(1, 1, 2, 2, 2, 2, 1)},
      {"rows of 16, groups 2", 2, 4, 6, 16, 6, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 2)},
      {"rows of 16, 1x1 padding 2", 2, 3, 5, 12, 4, 1, 1, conv_params(1, 1, 2, 2, 1, 1, 1)},
      // Other widths with OH*OW a multiple of 16 (the cpu implicit_gemm's shifted flat copies).
      {"8x8 images", 2, 5, 8, 8, 7, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"flat, dilation 2, uneven padding", 3, 3, 8, 12, 10, 3, 3, conv_params(1, 1, 2, 1, 2, 2, 1)},
      {"flat, groups 3", 2, 6, 4, 4, 9, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 3)},
      {"flat, 64 filters of 32 channels", 1, 32, 8, 8, 64, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
  };
  return c;
}

// Naive float64 convolution in scatter form (one loop nest for all three directions):
// y[n,k,oh,ow] = sum x[n,c,ih,iw] * w[k,c',r,s]; also returns, per element, the sum of |terms|
// (for a rounding tolerance).
struct Ref {
  std::vector<double> y, dx, dw, y_abs, dx_abs, dw_abs;
};

Ref reference(const ConvCase& cs, const std::vector<double>& x, const std::vector<double>& w,
              const std::vector<double>& b, const std::vector<double>& dy, int64_t oh, int64_t ow) {
  const Conv2dParams& p = cs.p;
  const int64_t cg = cs.c / p.groups, kg = cs.k / p.groups;
  Ref r;
  r.y.assign(cs.n * cs.k * oh * ow, 0.0);
  r.y_abs = r.y;
  r.dx.assign(x.size(), 0.0);
  r.dx_abs = r.dx;
  r.dw.assign(w.size(), 0.0);
  r.dw_abs = r.dw;
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t k = 0; k < cs.k; ++k)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t yi = ((n * cs.k + k) * oh + i) * ow + j;
          if (!b.empty()) r.y[yi] += b[k], r.y_abs[yi] += std::abs(b[k]);
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t u = 0; u < cs.r; ++u)
              for (int64_t v = 0; v < cs.s; ++v) {
                const int64_t ih = i * p.stride[0] - p.padding[0] + u * p.dilation[0];
                const int64_t iw = j * p.stride[1] - p.padding[1] + v * p.dilation[1];
                if (ih < 0 || ih >= cs.h || iw < 0 || iw >= cs.w) continue;
                const int64_t xi = ((n * cs.c + (k / kg) * cg + c) * cs.h + ih) * cs.w + iw;
                const int64_t wi = ((k * cg + c) * cs.r + u) * cs.s + v;
                r.y[yi] += x[xi] * w[wi];
                r.y_abs[yi] += std::abs(x[xi] * w[wi]);
                if (dy.empty()) continue;
                r.dx[xi] += dy[yi] * w[wi];
                r.dx_abs[xi] += std::abs(dy[yi] * w[wi]);
                r.dw[wi] += dy[yi] * x[xi];
                r.dw_abs[wi] += std::abs(dy[yi] * x[xi]);
              }
        }
  return r;
}

void check_close(const Tensor& got, const std::vector<double>& want,
                 const std::vector<double>& abs_sum, DType t) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  const double eps = t == kFloat32 ? 1.2e-7 : 2.3e-16;
  for (size_t i = 0; i < g.size(); ++i) {
    const double tol = 16 * eps * abs_sum[i] + 1e-30;
    if (!(std::abs(g[i] - want[i]) <= tol)) {
      CAPTURE(i);
      CAPTURE(g[i]);
      CAPTURE(want[i]);
      CAPTURE(tol);
      FAIL_CHECK("value mismatch");
      return;
    }
  }
}

// The registered algorithms that run on the cpu (every built-in one: im2col_gemm is the cpu's
// alone, direct and implicit_gemm run on every device).
std::vector<std::string> cpu_algo_names() {
  const ops::ConvKey key =
      ops::conv2d_key(ConvDirection::forward, {1, 1, 1, 1}, {1, 1, 1, 1}, kFloat32, kCPU, {});
  std::vector<std::string> names;
  for (const ops::ConvCandidate& c : ops::explain_conv_algos(key).candidates)
    if (c.backend == ops::ConvBackend::cpu) names.push_back(c.name);
  return names;
}

}  // namespace

TEST_CASE("conv2d: every algorithm, every direction, against a float64 reference") {
  ConvPolicyGuard guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  // "algorithm, dtype, direction" that some case ran, and the registry's reason for each one it
  // refused: one that no case ran is reported as skipped, with that reason.
  std::set<std::string> ran;
  std::map<std::string, std::string> refused;
  for (const ConvCase& cs : cases()) {
    const std::string case_name = cs.name;
    CAPTURE(case_name);
    const Shape xs{cs.n, cs.c, cs.h, cs.w}, ws{cs.k, cs.c / cs.p.groups, cs.r, cs.s};
    const Shape ys = ops::conv2d_output_shape(xs, ws, cs.p);
    for (DType t : {kFloat32, kFloat64}) {
      CAPTURE(t);
      for (Layout layout : {Layout::contiguous, Layout::sliced, Layout::transposed}) {
        CAPTURE(layout_name(layout));
        const Tensor x = random_operand(xs, t, layout, -1, 1, g);
        const Tensor w = random_operand(
            ws, t, layout == Layout::sliced ? Layout::transposed : Layout::sliced, -1, 1, g);
        const Tensor b = random_tensor({cs.k}, t, -1, 1, g);
        const Tensor dy = random_operand(ys, t, layout, -1, 1, g);
        const Ref ref = reference(cs, x.to_vector<double>(), w.to_vector<double>(),
                                  b.to_vector<double>(), dy.to_vector<double>(), ys[2], ys[3]);
        const Ref ref_nobias =
            reference(cs, x.to_vector<double>(), w.to_vector<double>(), {}, {}, ys[2], ys[3]);
        for (const std::string& algo : cpu_algo_names()) {
          CAPTURE(algo);
          ops::set_conv_algo(algo);
          // Some algorithms cover only some keys (e.g. float32 only); the others fall back.
          auto runs = [&](ConvDirection d) {
            const ops::ConvKey key = ops::conv2d_key(d, xs, ws, t, kCPU, cs.p);
            const ops::ConvSelection sel = ops::explain_conv_algos(key);
            const std::string what =
                algo + ", " + dtype_name(t) + ", " + ops::conv_direction_name(d);
            if (sel.chosen == algo) return ran.insert(what), true;
            for (const ops::ConvCandidate& c : sel.candidates)
              if (c.name == algo) refused.emplace(what, c.reason);
            return false;
          };
          if (runs(ConvDirection::forward)) {
            check_close(ops::conv2d(x, w, b, cs.p), ref.y, ref.y_abs, t);
            check_close(ops::conv2d(x, w, Tensor(), cs.p), ref_nobias.y, ref_nobias.y_abs, t);
          }
          if (runs(ConvDirection::backward_data))
            check_close(ops::conv2d_backward_data(dy, w, xs, cs.p), ref.dx, ref.dx_abs, t);
          if (runs(ConvDirection::backward_filter))
            check_close(ops::conv2d_backward_filter(dy, x, ws, cs.p), ref.dw, ref.dw_abs, t);
        }
      }
    }
  }
  for (const auto& [what, reason] : refused)
    if (ran.count(what) == 0) skip_case(what + ": " + reason);
}

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
    // instructions; the GPU ones refuse a cpu key.
    if (c.backend == ops::ConvBackend::cpu) {
      if (built_without_instructions(c))
        skip_case(c.name + " on a plain float32 convolution: " + c.reason);
      else
        CHECK(c.supported);
    } else {
      CHECK_FALSE(c.supported);
      check_message(c.reason, {"not supported", "cuda and emu"});
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
  const Ref ref = reference(cs, x.to_vector<double>(), w.to_vector<double>(), {}, {}, 3, 3);
  check_close(ops::conv2d(x, w, Tensor(), {}), ref.y, ref.y_abs, kFloat64);
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
  check_close(ops::conv2d(x, w, Tensor(), {}), ref.y, ref.y_abs, kFloat64);
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

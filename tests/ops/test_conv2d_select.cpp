// The convolution selector's policies beyond the heuristic: the benchmark (it times the eligible
// candidates once per key, respects the workspace limit, skips an algorithm that fails while
// timed, on cpu and emu), deterministic runs (bit-identical, and on emu in every thread order),
// and EMBER_CONV_POLICY / EMBER_CONV_WORKSPACE_LIMIT. Values are checked against the float64
// loops of ops/conv_test_util.h; timings are never asserted.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>

#include "conv_select_util.h"
#include "op_test_util.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "simt/simt_test_util.h"
#include "winograd_test_util.h"

using namespace ember;
using namespace ember::test;
using ops::ConvDirection;

namespace {

const ConvCase kCase{"3x3 pad 1", 2, 3, 8, 7, 4, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)};

struct Operands {
  Tensor x, w, dy;
  ConvRef ref;
};

Operands operands(DType t, std::mt19937& g) {
  const Shape xs{kCase.n, kCase.c, kCase.h, kCase.w}, ws{kCase.k, kCase.c, kCase.r, kCase.s};
  const Shape ys = ops::conv2d_output_shape(xs, ws, kCase.p);
  Operands o;
  o.x = random_tensor(xs, t, -1, 1, g);
  o.w = random_tensor(ws, t, -1, 1, g);
  o.dy = random_tensor(ys, t, -1, 1, g);
  o.ref = conv_reference(kCase, o.x.to_vector<double>(), o.w.to_vector<double>(), {},
                         o.dy.to_vector<double>(), ys[2], ys[3]);
  return o;
}

ops::ConvKey key_of(ConvDirection d, Device dev, DType t = kFloat32) {
  return ops::conv2d_key(d, {kCase.n, kCase.c, kCase.h, kCase.w},
                         {kCase.k, kCase.c, kCase.r, kCase.s}, t, dev, kCase.p);
}

// Runs all three directions on `dev` and checks each against the float64 loops, with the error
// growth of the algorithm the policy ran (the benchmark may time a Winograd one fastest).
void run_and_check(const Operands& o, Device dev, DType t) {
  const Tensor x = o.x.to(dev), w = o.w.to(dev), dy = o.dy.to(dev);
  auto growth = [&](ConvDirection d) {
    const std::string chosen = ops::explain_conv_algos(key_of(d, dev, t)).chosen;
    CAPTURE(chosen);
    return conv_error_growth(chosen);
  };
  const Tensor y = ops::conv2d(x, w, Tensor(), kCase.p);
  check_conv_close(y, dev, o.ref.y, o.ref.y_abs, t, growth(ConvDirection::forward));
  const Tensor dx = ops::conv2d_backward_data(dy, w, x.shape(), kCase.p);
  check_conv_close(dx, dev, o.ref.dx, o.ref.dx_abs, t, growth(ConvDirection::backward_data));
  const Tensor dw = ops::conv2d_backward_filter(dy, x, w.shape(), kCase.p);
  check_conv_close(dw, dev, o.ref.dw, o.ref.dw_abs, t, growth(ConvDirection::backward_filter));
}

const ConvDirection kDirections[] = {ConvDirection::forward, ConvDirection::backward_data,
                                     ConvDirection::backward_filter};

// Under the benchmark policy, the ranking of a timed key: every ranked candidate measured,
// fastest first, the chosen one ranked 0; no unsupported candidate ranked.
void check_measured_ranking(const ops::ConvSelection& sel) {
  CHECK(sel.policy == ops::ConvPolicy::benchmark);
  REQUIRE(!sel.chosen.empty());
  double previous = -1.0;
  for (int rank = 0;; ++rank) {
    const ops::ConvCandidate* c = nullptr;
    for (const ops::ConvCandidate& x : sel.candidates)
      if (x.rank == rank) c = &x;
    if (c == nullptr) break;
    CHECK(c->supported);
    CHECK(c->time_ms >= 0.0);
    CHECK(c->time_ms >= previous);
    previous = c->time_ms;
    CHECK(c->chosen == (rank == 0));
    if (rank == 0) CHECK(c->name == sel.chosen);
  }
  for (const ops::ConvCandidate& c : sel.candidates)
    if (!c.supported) CHECK(c.rank == -1);
}

}  // namespace

TEST_CASE("conv2d benchmark: times each key once, picks a measured candidate, cpu and emu") {
  ConvPolicyGuard guard;
  ops::clear_conv_algo_cache();
  ops::set_conv_benchmark(true);
  CHECK(ops::conv_benchmark());
  CHECK(ops::conv_policy() == ops::ConvPolicy::benchmark);
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Operands o = operands(kFloat32, g);
  for (Device dev : {kCPU, kEmu0}) {
    CAPTURE(dev.str());
    // Before the first run the key is not timed: explain says so and times nothing.
    const ops::ConvBenchmarkStats before = ops::conv_benchmark_stats();
    const ops::ConvSelection untimed = ops::explain_conv_algos(key_of(ConvDirection::forward, dev));
    CHECK(untimed.policy == ops::ConvPolicy::benchmark);
    check_message(untimed.reason, {"not timed yet"});
    CHECK(ops::conv_benchmark_stats().keys_timed == before.keys_timed);

    run_and_check(o, dev, kFloat32);
    const ops::ConvBenchmarkStats timed = ops::conv_benchmark_stats();
    CHECK(timed.keys_timed == before.keys_timed + 3);  // one per direction
    CHECK(timed.candidates_timed >= before.candidates_timed + 3);
    for (ConvDirection d : kDirections) {
      const ops::ConvSelection sel = ops::explain_conv_algos(key_of(d, dev));
      check_measured_ranking(sel);
      check_message(sel.source, {"cached", "timed in this process"});
    }
    // The second run of each key times nothing.
    run_and_check(o, dev, kFloat32);
    CHECK(ops::conv_benchmark_stats().keys_timed == timed.keys_timed);
    CHECK(ops::conv_benchmark_stats().candidates_timed == timed.candidates_timed);
  }
  // benchmark_conv_algos measures again on request, whatever is cached.
  const int64_t keys = ops::conv_benchmark_stats().keys_timed;
  const ops::ConvSelection again = ops::benchmark_conv_algos(key_of(ConvDirection::forward, kCPU));
  check_measured_ranking(again);
  CHECK(again.source == "timed now");
  CHECK(ops::conv_benchmark_stats().keys_timed == keys + 1);
  CHECK_THROWS_AS(ops::benchmark_conv_algos(key_of(ConvDirection::forward, kCPU), 4), ValueError);
}

TEST_CASE("conv2d heuristic: a candidate over the workspace limit is not ranked; the next runs") {
  ConvPolicyGuard guard;
  int big_runs = 0;
  // The lowest cost of all (-1), so it would be chosen, but 64 MiB of workspace.
  ScopedAlgo big(std::make_shared<const RefusingAlgo>("test_big_workspace",
                                                      RefusingAlgo::Throws::not_supported, true,
                                                      size_t{64} << 20, &big_runs));
  const ops::ConvKey key = key_of(ConvDirection::forward, kCPU);
  CHECK(ops::explain_conv_algos(key).chosen == "test_big_workspace");
  ops::set_conv_workspace_limit(size_t{1} << 20);
  const ops::ConvSelection sel = ops::explain_conv_algos(key);
  CHECK(sel.chosen != "test_big_workspace");
  CHECK_FALSE(sel.chosen.empty());
  for (const ops::ConvCandidate& c : sel.candidates)
    if (c.name == "test_big_workspace") {
      CHECK(c.rank == -1);
      check_message(c.reason, {"workspace (64.00 MiB) is over the limit (1.00 MiB"});
    }
  std::mt19937 g(fresh_seed());
  run_and_check(operands(kFloat64, g), kCPU, kFloat64);
  CHECK(big_runs == 0);
  // Forced, it runs whatever its workspace (and refuses, so the run fails with its reason).
  ops::set_conv_algo("test_big_workspace");
  CHECK(ops::explain_conv_algos(key).chosen == "test_big_workspace");
}

TEST_CASE("conv2d benchmark: skips candidates that fail while timed, and the workspace limit") {
  ConvPolicyGuard guard;
  int nsup_runs = 0, oom_runs = 0, big_runs = 0;
  using T = RefusingAlgo::Throws;
  ScopedAlgo nsup(std::make_shared<const RefusingAlgo>("test_not_supported", T::not_supported, true,
                                                       0, &nsup_runs));
  ScopedAlgo oom(std::make_shared<const RefusingAlgo>("test_out_of_memory", T::out_of_memory, true,
                                                      0, &oom_runs));
  ScopedAlgo big(std::make_shared<const RefusingAlgo>("test_big_workspace", T::not_supported, true,
                                                      size_t{64} << 20, &big_runs));
  ops::set_conv_benchmark(true);
  const size_t limit = 1 << 20;
  ops::set_conv_workspace_limit(limit);
  CHECK(ops::conv_workspace_limit() == limit);
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Operands o = operands(kFloat64, g);
  for (Device dev : {kCPU, kEmu0}) {
    CAPTURE(dev.str());
    nsup_runs = oom_runs = big_runs = 0;
    run_and_check(o, dev, kFloat64);
    // Each refusing one was tried once per direction (its warm-up) and never again; the one over
    // the workspace limit never ran.
    CHECK(nsup_runs == 3);
    CHECK(oom_runs == 3);
    CHECK(big_runs == 0);
    for (ConvDirection d : kDirections) {
      const ops::ConvSelection sel = ops::explain_conv_algos(key_of(d, dev, kFloat64));
      check_measured_ranking(sel);
      for (const ops::ConvCandidate& c : sel.candidates) {
        if (c.name == "test_not_supported")
          check_message(c.reason, {"failed while timed", "refuses"});
        if (c.name == "test_out_of_memory")
          check_message(c.reason, {"failed while timed", "out of memory"});
        if (c.name == "test_big_workspace")
          check_message(c.reason, {"workspace", "limit", "1.00 MiB"});
        if (c.name.rfind("test_", 0) == 0) CHECK(c.rank == -1);
        if (c.supported && c.workspace_bytes > limit) CHECK(c.rank == -1);
      }
    }
  }
  // Under the heuristic the refusing ones rank first (cost -1) and the fallback skips them.
  ops::set_conv_benchmark(false);
  nsup_runs = oom_runs = 0;
  const ops::ConvSelection h =
      ops::explain_conv_algos(key_of(ConvDirection::forward, kCPU, kFloat64));
  CHECK(h.chosen.rfind("test_", 0) == 0);
  check_conv_close(ops::conv2d(o.x, o.w, Tensor(), kCase.p), kCPU, o.ref.y, o.ref.y_abs, kFloat64);
  CHECK(nsup_runs + oom_runs >= 1);
}

TEST_CASE("conv2d benchmark with the deterministic flag times deterministic algorithms only") {
  ConvPolicyGuard guard;
  int runs = 0;
  ScopedAlgo nondet(std::make_shared<const RefusingAlgo>(
      "test_nondeterministic", RefusingAlgo::Throws::not_supported, false, 0, &runs));
  ops::set_conv_benchmark(true);
  ops::set_conv_deterministic(true);  // both on: as PyTorch's benchmark + deterministic
  CHECK(ops::conv_policy() == ops::ConvPolicy::benchmark);
  const ops::ConvKey key = key_of(ConvDirection::forward, kCPU);
  CHECK(key.deterministic == 1);
  const ops::ConvSelection sel = ops::benchmark_conv_algos(key);
  check_measured_ranking(sel);
  CHECK(runs == 0);
  check_message(sel.reason, {"among deterministic algorithms"});
  for (const ops::ConvCandidate& c : sel.candidates) {
    if (c.name == "test_nondeterministic") CHECK(c.reason == "not deterministic");
    if (c.rank >= 0) CHECK(c.deterministic);
  }
  // set_conv_policy sets both flags at once.
  ops::set_conv_policy(ops::ConvPolicy::deterministic);
  CHECK_FALSE(ops::conv_benchmark());
  CHECK(ops::conv_deterministic());
  ops::set_conv_policy(ops::ConvPolicy::heuristic);
  CHECK(ops::conv_policy() == ops::ConvPolicy::heuristic);
  CHECK_THROWS_AS(ops::set_conv_policy(ops::ConvPolicy::forced), ValueError);
}

TEST_CASE("conv2d deterministic policy: bit-identical over three runs, cpu and emu thread orders") {
  ConvPolicyGuard guard;
  ops::set_conv_policy(ops::ConvPolicy::deterministic);
  std::mt19937 g(fresh_seed());
  const Operands o = operands(kFloat32, g);
  auto run_all = [&](Device dev) {
    const Tensor x = o.x.to(dev), w = o.w.to(dev), dy = o.dy.to(dev);
    std::vector<std::vector<float>> out;
    out.push_back(ops::conv2d(x, w, Tensor(), kCase.p).to_vector<float>());
    out.push_back(ops::conv2d_backward_data(dy, w, x.shape(), kCase.p).to_vector<float>());
    out.push_back(ops::conv2d_backward_filter(dy, x, w.shape(), kCase.p).to_vector<float>());
    return out;
  };
  auto same_bits = [](const std::vector<std::vector<float>>& a,
                      const std::vector<std::vector<float>>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].size() != b[i].size() ||
          std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
        return false;
    return true;
  };
  const auto first = run_all(kCPU);
  for (int run = 1; run < 3; ++run) CHECK(same_bits(first, run_all(kCPU)));
  // emu: each direction's algorithm in every thread order gives the same bits.
  std::vector<std::vector<float>> emu_first;
  for (const simt_test::Config& c : simt_test::test_orders()) {
    CAPTURE(c.name());
    simt_test::ScopedOptions scoped(c);
    const auto got = run_all(kEmu0);
    if (emu_first.empty())
      emu_first = got;
    else
      CHECK(same_bits(emu_first, got));
  }
  for (ConvDirection d : kDirections) {
    const ops::ConvSelection sel = ops::explain_conv_algos(key_of(d, kEmu0));
    CHECK(sel.policy == ops::ConvPolicy::deterministic);
  }
}

TEST_CASE("conv2d policy from EMBER_CONV_POLICY and EMBER_CONV_WORKSPACE_LIMIT") {
  ConvPolicyGuard guard;
  ops::reset_conv_settings();
  setenv("EMBER_CONV_POLICY", "benchmark", 1);
  CHECK(ops::conv_policy() == ops::ConvPolicy::benchmark);
  setenv("EMBER_CONV_POLICY", "deterministic", 1);
  CHECK(ops::conv_deterministic());
  CHECK(key_of(ConvDirection::forward, kCPU).deterministic == 1);
  setenv("EMBER_CONV_POLICY", "heuristic", 1);
  CHECK(ops::conv_policy() == ops::ConvPolicy::heuristic);
  // The API takes precedence over the variable.
  setenv("EMBER_CONV_POLICY", "benchmark", 1);
  ops::set_conv_policy(ops::ConvPolicy::heuristic);
  CHECK_FALSE(ops::conv_benchmark());
  ops::reset_conv_settings();
  CHECK(ops::conv_benchmark());

  setenv("EMBER_CONV_POLICY", "fastest", 1);
  for (int i = 0; i < 2; ++i) {
    try {
      if (i == 0)
        ops::conv_policy();
      else
        ops::conv2d(ones({1, 1, 3, 3}), ones({1, 1, 3, 3}), Tensor(), {});
      FAIL("expected a ValueError");
    } catch (const ValueError& e) {
      check_message(e.what(),
                    {"EMBER_CONV_POLICY", "'fastest'", "heuristic", "benchmark", "deterministic"});
    }
  }
  unsetenv("EMBER_CONV_POLICY");
  CHECK_THROWS_AS(ops::parse_conv_policy("forced"), ValueError);

  CHECK(ops::conv_workspace_limit() == ops::kConvDefaultWorkspaceLimit);
  setenv("EMBER_CONV_WORKSPACE_LIMIT", "256K", 1);
  CHECK(ops::conv_workspace_limit() == 256 * 1024);
  setenv("EMBER_CONV_WORKSPACE_LIMIT", "3G", 1);
  CHECK(ops::conv_workspace_limit() == size_t{3} << 30);
  setenv("EMBER_CONV_WORKSPACE_LIMIT", "1000", 1);
  CHECK(ops::conv_workspace_limit() == 1000);
  for (const char* bad : {"12Q", "-1", "", "M", "99999999999999999999", "1.5G"}) {
    if (*bad == '\0') continue;  // empty: the default applies
    CAPTURE(bad);
    setenv("EMBER_CONV_WORKSPACE_LIMIT", bad, 1);
    try {
      ops::conv_workspace_limit();
      FAIL("expected a ValueError");
    } catch (const ValueError& e) {
      check_message(e.what(), {"EMBER_CONV_WORKSPACE_LIMIT", std::string("'") + bad + "'"});
    }
  }
  ops::set_conv_workspace_limit(4096);  // the API takes precedence
  CHECK(ops::conv_workspace_limit() == 4096);
}

// conv2d on every target (tests/spec/spec.h): every registered algorithm that runs on the target
// (cpu: direct, implicit_gemm, im2col_gemm; emu and cuda: direct, implicit_gemm, fft; both: the
// two Winograd algorithms, whose per-element bound is widened by their transforms' growth,
// ops/winograd_test_util.h), in every direction, with and without bias, against the naive
// float64 loops of ops/conv_test_util.h, on its case table (odd shapes, batch 1, channels not a
// multiple of 8, sizes that straddle the tiles, 1x1 and 5x5, stride, padding, dilation, groups,
// depthwise, split-K backward-filter; Winograd's edge tiles: outputs off the tile multiples and
// smaller than a tile, padding 0..2) and strided operands. On the cpu, implicit_gemm runs once
// per instruction set this CPU has (AVX-512, AVX2: the EMBER_CPU_ISA cap set to each,
// kernels/cpu/cpu_isa.h); one the CPU lacks is reported as skipped, and so is an algorithm that
// refuses a key here (float32 only, no AVX2; Winograd: anything but 3x3 stride 1, and
// backward-filter), with the registry's reason, when no case ran it. The FFT convolution has
// cases of its own (every filter size it claims, images smaller than one tile, padding beyond
// the filter, several tiles a side).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "kernels/cpu/cpu_isa.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "ops/winograd_test_util.h"
#include "skip_case.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

using ops::Conv2dParams;
using ops::ConvDirection;

// The registered algorithms of the target's own backend: the cpu's on the cpu, Ember's CUDA
// kernels (and cuDNN, on cuda) on the GPU devices.
std::vector<std::string> algo_names(Device dev) {
  const ops::ConvKey key =
      ops::conv2d_key(ConvDirection::forward, {1, 1, 1, 1}, {1, 1, 1, 1}, kFloat32, dev, {});
  std::vector<std::string> names;
  for (const ops::ConvCandidate& c : ops::explain_conv_algos(key).candidates) {
    const bool own = dev.is_cpu() ? c.backend == ops::ConvBackend::cpu
                                  : c.backend == ops::ConvBackend::ember_cuda ||
                                        (dev.is_cuda() && c.backend == ops::ConvBackend::cudnn);
    if (own) names.push_back(c.name);
  }
  return names;
}

// One pass of an algorithm over the cases: on the cpu, implicit_gemm once per instruction set the
// CPU has (`isa`, the cap to set), every other algorithm once (isa empty).
struct AlgoRun {
  std::string algo, isa;
  std::string label() const { return isa.empty() ? algo : algo + "[" + isa + "]"; }
};

constexpr kernels::cpu::CpuIsa kKernelIsas[] = {kernels::cpu::CpuIsa::avx512,
                                                kernels::cpu::CpuIsa::avx2};

std::vector<AlgoRun> algo_runs(Device dev) {
  namespace kc = kernels::cpu;
  std::vector<AlgoRun> out;
  for (const std::string& algo : algo_names(dev)) {
    bool any = false;
    if (dev.is_cpu() && algo == "implicit_gemm")
      for (kc::CpuIsa isa : kKernelIsas)
        if (isa <= kc::cpu_isa_detected()) out.push_back({algo, kc::cpu_isa_name(isa)}), any = true;
    if (!any) out.push_back({algo, ""});  // on a CPU with neither, the registry says why
  }
  return out;
}

// Lifts the cap the cpu runs set, whatever happens.
struct CpuIsaGuard {
  ~CpuIsaGuard() { kernels::cpu::set_cpu_isa_cap(""); }
};

// The operand layouts a case runs with: all three on the cpu and cuda; on the emulator, whose
// cost per case is some 50 times the cpu's, one per thread order and a different one in each,
// so that the three orders together run every case in every layout once.
std::vector<Layout> layouts_for(Device dev, size_t case_index) {
  const Layout all[] = {Layout::contiguous, Layout::sliced, Layout::transposed};
  if (!dev.is_emu()) return {all[0], all[1], all[2]};
  return {all[(case_index + static_cast<size_t>(simt::options().order)) % 3]};
}

// The cases aimed at `fft` (stride 1, dilation 1, groups 1): filters 1x1 to 17x17 (17x17 on
// 40 x 40 takes 64-point tiles, 13x13 and 9x9 32-point ones, the rest 16), odd sizes, batch 1,
// channel counts off 8, images smaller than one tile or than the filter, padding beyond R - 1
// (backward-data then crops: pad' = R - 1 - pad < 0). Only `fft` runs them: the other
// algorithms' paths for these geometries are conv_cases()'s, and on the emulator a 13x13 or
// 17x17 filter through `direct` or `implicit_gemm` costs minutes a run for nothing new.
const std::vector<ConvCase>& fft_cases() {
  static const std::vector<ConvCase> c = {
      {"fft 1x1, batch 1, 5x7 (less than a tile)", 1, 3, 5, 7, 5, 1, 1,
       conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"fft 3x3 pad 1, 19x17 (two tiles a side)", 2, 5, 19, 17, 3, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"fft 5x5 no padding, 21x23", 1, 3, 21, 23, 7, 5, 5, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"fft 7x7 pad 3, 27x25", 1, 3, 27, 25, 5, 7, 7, conv_params(1, 1, 3, 3, 1, 1, 1)},
      {"fft 9x9 pad 4, batch 3, 11x13", 3, 2, 11, 13, 3, 9, 9, conv_params(1, 1, 4, 4, 1, 1, 1)},
      {"fft 13x13 pad 6, 9x11 (less than the filter)", 1, 3, 9, 11, 4, 13, 13,
       conv_params(1, 1, 6, 6, 1, 1, 1)},
      {"fft 13x13 no padding, 31x29", 1, 2, 31, 29, 3, 13, 13, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"fft 7x5, padding (2, 5): beyond S - 1 in width", 2, 3, 10, 9, 3, 7, 5,
       conv_params(1, 1, 2, 5, 1, 1, 1)},
      {"fft 3x3 pad 3", 1, 2, 6, 7, 3, 3, 3, conv_params(1, 1, 3, 3, 1, 1, 1)},
      {"fft 17x17 pad 8, 40x40 (64-point tiles)", 1, 2, 40, 40, 2, 17, 17,
       conv_params(1, 1, 8, 8, 1, 1, 1)},
  };
  return c;
}

// conv_cases() then fft_cases(), each aimed at the algorithms its `only` says.
std::vector<ConvCase> all_cases() {
  std::vector<ConvCase> all = conv_cases();
  for (ConvCase c : fft_cases()) {
    c.only = "fft";
    all.push_back(c);
  }
  return all;
}

// `fft` against the float64 loops: its rounding is at the size of a whole tile's spectrum, not of
// one output's terms (every output of a tile comes out of the same inverse transform), so an
// element's bound adds kFftUlps ulps of the largest sum of |terms| in the tensor to
// check_conv_close's 16 ulps of its own. Measured over these cases, the largest error is about a
// tenth of the bound (the test case reports it).
constexpr double kFftUlps = 16;
double fft_worst = 0;  // the largest error / bound seen, reported at the end of the test case
void check_fft_close(const Tensor& got, Device dev, const std::vector<double>& want,
                     const std::vector<double>& abs_sum, DType t) {
  CHECK(got.device() == dev);
  CHECK(got.dtype() == t);
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  const double eps = t == kFloat32 ? 1.2e-7 : 2.3e-16;
  double scale = 0, worst = 0;
  for (double a : abs_sum) scale = std::max(scale, a);
  for (size_t i = 0; i < g.size(); ++i)
    worst = std::max(worst, std::abs(g[i] - want[i]) /
                                (16 * eps * abs_sum[i] + kFftUlps * eps * scale + 1e-300));
  CAPTURE(worst);
  CHECK(worst <= 1.0);
  fft_worst = std::max(fft_worst, worst);
}

// v clamped to [lo, hi].
std::vector<double> clamped(std::vector<double> v, double lo, double hi) {
  for (double& e : v) e = std::min(std::max(e, lo), hi);
  return v;
}

}  // namespace

TEST_CASE("conv2d: every algorithm of every target, every direction, against float64 loops") {
  ConvPolicyGuard guard;
  CpuIsaGuard isa_guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  // "algorithm, dtype, direction" that some case ran, and the registry's reason for each one it
  // refused: one that no case ran is reported as skipped, with that reason.
  std::set<std::string> ran;
  std::map<std::string, std::string> refused;
  // For the ones that ran some cases and refused others: how many cases, and the first reason.
  std::map<std::string, std::pair<int, std::string>> partly;
  for_each_target([&](Device dev) {
    const std::vector<ConvCase> cases = all_cases();
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const ConvCase& cs = cases[ci];
      const std::string case_name = cs.name;
      CAPTURE(case_name);
      const Shape xs{cs.n, cs.c, cs.h, cs.w}, ws{cs.k, cs.c / cs.p.groups, cs.r, cs.s};
      const Shape ys = ops::conv2d_output_shape(xs, ws, cs.p);
      for (DType t : {kFloat32, kFloat64}) {
        CAPTURE(t);
        for (Layout layout : layouts_for(dev, ci)) {
          CAPTURE(layout);
          const Tensor x = random_operand(xs, t, layout, -1, 1, g, 0.0, dev);
          const Tensor w =
              random_operand(ws, t, layout == Layout::sliced ? Layout::transposed : Layout::sliced,
                             -1, 1, g, 0.0, dev);
          const Tensor b = random_tensor({cs.k}, t, -1, 1, g).to(dev);
          const Tensor dy = random_operand(ys, t, layout, -1, 1, g, 0.0, dev);
          const ConvRef ref =
              conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(),
                             b.to_vector<double>(), dy.to_vector<double>(), ys[2], ys[3]);
          const ConvRef ref_nobias = conv_reference(cs, x.to_vector<double>(),
                                                    w.to_vector<double>(), {}, {}, ys[2], ys[3]);
          for (const AlgoRun& run : algo_runs(dev)) {
            const std::string& algo = run.algo;
            if (cs.only != nullptr && algo != cs.only) continue;
            const std::string label = run.label();
            CAPTURE(label);
            kernels::cpu::set_cpu_isa_cap(run.isa);
            ops::clear_conv_algo_cache();  // the registry's choices hold for one cap
            ops::set_conv_algo(algo);
            // Some algorithms cover only some keys (e.g. float32 only); the others fall back.
            auto runs = [&](ConvDirection d) {
              const ops::ConvKey key = ops::conv2d_key(d, xs, ws, t, dev, cs.p);
              const ops::ConvSelection sel = ops::explain_conv_algos(key);
              const std::string what = dev.str() + ", " + label + ", " + dtype_name(t) + ", " +
                                       ops::conv_direction_name(d);
              if (sel.chosen == algo) return ran.insert(what), true;
              for (const ops::ConvCandidate& c : sel.candidates)
                if (c.name == algo) {
                  refused.emplace(what, c.reason);
                  auto& [count, example] = partly[what];
                  if (count++ == 0) example = "'" + case_name + "': " + c.reason;
                }
              return false;
            };
            // fft's rounding is at the scale of a tile (check_fft_close); Winograd's grows with
            // its transforms (conv_error_growth).
            const double growth = conv_error_growth(algo);
            const auto check = [&](const Tensor& got, const std::vector<double>& want,
                                   const std::vector<double>& abs_sum) {
              if (algo == "fft")
                check_fft_close(got, dev, want, abs_sum, t);
              else
                check_conv_close(got, dev, want, abs_sum, t, growth);
            };
            if (runs(ConvDirection::forward)) {
              check(ops::conv2d(x, w, b, cs.p), ref.y, ref.y_abs);
              check(ops::conv2d(x, w, Tensor(), cs.p), ref_nobias.y, ref_nobias.y_abs);
              // Clamped (inside the cpu's implicit GEMM and direct kernels, after the others):
              // a clamp moves no value further from the reference's clamp.
              check(ops::conv2d_bias_clamp(x, w, b, cs.p, -0.3, 0.4), clamped(ref.y, -0.3, 0.4),
                    ref.y_abs);
              check(ops::conv2d_bias_relu(x, w, Tensor(), cs.p),
                    clamped(ref_nobias.y, 0.0, std::numeric_limits<double>::infinity()),
                    ref_nobias.y_abs);
              // A residual (dy's values, in its layout) added before the clamp, and alone:
              // one more rounding, of a sum at most y_abs + |z|.
              const std::vector<double> z = dy.to_vector<double>();
              std::vector<double> sum = ref.y, sum_abs = ref.y_abs;
              for (size_t i = 0; i < sum.size(); ++i) {
                sum[i] += z[i];
                sum_abs[i] += std::abs(z[i]);
              }
              const double inf = std::numeric_limits<double>::infinity();
              check(ops::conv2d_bias_add_clamp(x, w, b, dy, cs.p, 0.0, inf),
                    clamped(sum, 0.0, inf), sum_abs);
              check(ops::conv2d_bias_add_clamp(x, w, b, dy, cs.p, -inf, inf), sum, sum_abs);
            }
            if (runs(ConvDirection::backward_data))
              check(ops::conv2d_backward_data(dy, w, xs, cs.p), ref.dx, ref.dx_abs);
            if (runs(ConvDirection::backward_filter))
              check(ops::conv2d_backward_filter(dy, x, ws, cs.p), ref.dw, ref.dw_abs);
          }
        }
      }
    }
  });
  if (fft_worst > 0) MESSAGE("fft: the largest error is ", fft_worst, " of its bound");
  for (const auto& [what, reason] : refused)
    if (ran.count(what) == 0) skip_case(what + ": " + reason);
  for (kernels::cpu::CpuIsa isa : kKernelIsas)
    if (isa > kernels::cpu::cpu_isa_detected())
      skip_case(std::string("cpu, implicit_gemm[") + kernels::cpu::cpu_isa_name(isa) +
                "], every case: this CPU has only " +
                kernels::cpu::cpu_isa_name(kernels::cpu::cpu_isa_detected()));
  // Runs (case, dtype, layout) refused by an algorithm that ran others, counted over every
  // target of the device, so that what it does not claim is said, not passed.
  for (const auto& [what, refusals] : partly)
    if (ran.count(what) != 0)
      skip_case(what + ": " + std::to_string(refusals.first) + " runs refused, e.g. " +
                refusals.second);
}

}  // namespace ember::test

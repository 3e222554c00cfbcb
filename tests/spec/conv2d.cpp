// conv2d on every target (tests/spec/spec.h): every registered algorithm that runs on the target
// (cpu: direct, implicit_gemm, im2col_gemm; emu and cuda: direct, implicit_gemm; both: the two
// Winograd algorithms, whose per-element bound is widened by their transforms' growth,
// ops/winograd_test_util.h), in every direction, with and without bias, against the naive
// float64 loops of ops/conv_test_util.h, on
// its case table (odd shapes, batch 1, channels not a multiple of 8, sizes that straddle the
// tiles, 1x1 and 5x5, stride, padding, dilation, groups, depthwise, split-K backward-filter) and
// strided operands (Winograd's edge tiles: outputs off the tile multiples and smaller than a
// tile, padding 0..2, channels off the multiples of 8). An algorithm that refuses a key here
// (float32 only, no AVX-512; Winograd: anything but 3x3 stride 1, and backward-filter) is reported
// as skipped with the registry's reason when no case ran it.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

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

// The operand layouts a case runs with: all three on the cpu and cuda; on the emulator, whose
// cost per case is some 50 times the cpu's, one per thread order and a different one in each,
// so that the three orders together run every case in every layout once.
std::vector<Layout> layouts_for(Device dev, size_t case_index) {
  const Layout all[] = {Layout::contiguous, Layout::sliced, Layout::transposed};
  if (!dev.is_emu()) return {all[0], all[1], all[2]};
  return {all[(case_index + static_cast<size_t>(simt::options().order)) % 3]};
}

}  // namespace

TEST_CASE("conv2d: every algorithm of every target, every direction, against float64 loops") {
  ConvPolicyGuard guard;
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
    for (size_t ci = 0; ci < conv_cases().size(); ++ci) {
      const ConvCase& cs = conv_cases()[ci];
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
          for (const std::string& algo : algo_names(dev)) {
            CAPTURE(algo);
            ops::set_conv_algo(algo);
            // Some algorithms cover only some keys (e.g. float32 only); the others fall back.
            auto runs = [&](ConvDirection d) {
              const ops::ConvKey key = ops::conv2d_key(d, xs, ws, t, dev, cs.p);
              const ops::ConvSelection sel = ops::explain_conv_algos(key);
              const std::string what = dev.str() + ", " + algo + ", " + dtype_name(t) + ", " +
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
            const double growth = conv_error_growth(algo);
            if (runs(ConvDirection::forward)) {
              check_conv_close(ops::conv2d(x, w, b, cs.p), dev, ref.y, ref.y_abs, t, growth);
              check_conv_close(ops::conv2d(x, w, Tensor(), cs.p), dev, ref_nobias.y,
                               ref_nobias.y_abs, t, growth);
            }
            if (runs(ConvDirection::backward_data))
              check_conv_close(ops::conv2d_backward_data(dy, w, xs, cs.p), dev, ref.dx, ref.dx_abs,
                               t, growth);
            if (runs(ConvDirection::backward_filter))
              check_conv_close(ops::conv2d_backward_filter(dy, x, ws, cs.p), dev, ref.dw,
                               ref.dw_abs, t);
          }
        }
      }
    }
  });
  for (const auto& [what, reason] : refused)
    if (ran.count(what) == 0) skip_case(what + ": " + reason);
  // Runs (case, dtype, layout) refused by an algorithm that ran others, counted over every
  // target of the device, so that what it does not claim is said, not passed.
  for (const auto& [what, refusals] : partly)
    if (ran.count(what) != 0)
      skip_case(what + ": " + std::to_string(refusals.first) + " runs refused, e.g. " +
                refusals.second);
}

}  // namespace ember::test

// `ember algos`: for one convolution, every registered algorithm in every direction — whether it
// supports the problem and why, which one the policy picks, its median time, and its largest
// error against a float64 reference — side by side.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>

#include "cli/commands.h"
#include "cli/validate.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "runtime/rng.h"

namespace ember::cli {
namespace {

struct AlgosArgs {
  std::vector<int64_t> input{32, 16, 32, 32}, weight{16, 16, 3, 3};
  int64_t stride = 1, padding = 1, dilation = 1, groups = 1;
  std::string dtype = "float32", device = "cpu";
  int repeats = 5;
};

// Runs one direction with the currently forced algorithm.
Tensor run_direction(ops::ConvDirection dir, const Tensor& x, const Tensor& w, const Tensor& gy,
                     const ops::Conv2dParams& p) {
  switch (dir) {
    case ops::ConvDirection::forward: return ops::conv2d(x, w, Tensor(), p);
    case ops::ConvDirection::backward_data: return ops::conv2d_backward_data(gy, w, x.shape(), p);
    case ops::ConvDirection::backward_filter:
      return ops::conv2d_backward_filter(gy, x, w.shape(), p);
  }
  return Tensor();
}

// Restores the forced algorithm that was in effect when it was made.
struct ForcedGuard {
  std::string saved = ops::forced_conv_algo();
  ~ForcedGuard() {
    try {
      ops::set_conv_algo(saved);
    } catch (const Error&) {
    }
  }
};

int run_algos(const AlgosArgs& a) {
  EMBER_CHECK_VALUE(a.input.size() == 4 && a.weight.size() == 4,
                    "algos: --input and --weight take 4 sizes each (N,C,H,W and K,C/groups,R,S)");
  const DType dt = parse_dtype(a.dtype);
  const Device dev = Device::parse(a.device);
  ops::Conv2dParams p;
  p.stride = {a.stride, a.stride};
  p.padding = {a.padding, a.padding};
  p.dilation = {a.dilation, a.dilation};
  p.groups = a.groups;
  Shape xs(a.input), ws(a.weight);
  Shape ys = ops::conv2d_output_shape(xs, ws, p);
  manual_seed(0);
  Tensor x = randn(xs, {dt, dev}), w = randn(ws, {dt, dev}), gy = randn(ys, {dt, dev});
  const double flops = 2.0 * static_cast<double>(checked_numel(ys)) * ws[1] * ws[2] * ws[3];

  std::cout << "conv2d x" << xs << " w" << ws << " -> y" << ys << ", stride " << a.stride
            << ", padding " << a.padding << ", dilation " << a.dilation << ", groups " << a.groups
            << ", " << dt << " on " << dev << "\n";
  ForcedGuard guard;
  const ops::ConvDirection dirs[] = {ops::ConvDirection::forward, ops::ConvDirection::backward_data,
                                     ops::ConvDirection::backward_filter};
  for (ops::ConvDirection dir : dirs) {
    ops::set_conv_algo(guard.saved);  // explain the policy the user runs with
    ops::ConvSelection sel = ops::explain_conv_algos(ops::conv2d_key(dir, xs, ws, dt, dev, p));
    // float64 reference from the direct algorithm on the CPU.
    ops::set_conv_algo("direct");
    Tensor ref = run_direction(dir, x.to(kCPU, kFloat64), w.to(kCPU, kFloat64),
                               gy.to(kCPU, kFloat64), p);
    double ref_scale = ops::amax(ops::abs(ref)).item();
    std::printf("\n%s (policy %s: %s)\n", ops::conv_direction_name(dir),
                ops::conv_policy_name(sel.policy),
                sel.chosen.empty() ? "nothing can run it" : ("picks " + sel.chosen).c_str());
    std::printf("  %-18s %-10s %-6s %10s %10s %12s  %s\n", "algorithm", "backend", "det", "ms",
                "GFLOP/s", "max rel err", "note");
    for (const ops::ConvCandidate& c : sel.candidates) {
      std::string mark = c.chosen ? "*" : " ";
      if (!c.supported) {
        std::printf(" %s%-18s %-10s %-6s %10s %10s %12s  %s\n", mark.c_str(), c.name.c_str(),
                    ops::conv_backend_name(c.backend), c.deterministic ? "yes" : "no", "-", "-",
                    "-", c.reason.c_str());
        continue;
      }
      try {
        ops::set_conv_algo(c.name);
        Tensor out = run_direction(dir, x, w, gy, p);  // warm-up
        std::vector<double> times;
        for (int r = 0; r < a.repeats; ++r) {
          auto t0 = std::chrono::steady_clock::now();
          out = run_direction(dir, x, w, gy, p);
          Tensor host = out.to(kCPU);  // waits for the device
          times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(times.begin(), times.end());
        double t = times[times.size() / 2];
        double err = ops::amax(ops::abs(ops::sub(out.to(kCPU, kFloat64), ref))).item() /
                     (ref_scale > 0 ? ref_scale : 1.0);
        std::printf(" %s%-18s %-10s %-6s %10.3f %10.2f %12.2e  %s\n", mark.c_str(), c.name.c_str(),
                    ops::conv_backend_name(c.backend), c.deterministic ? "yes" : "no", t * 1e3,
                    flops / t / 1e9, err, c.reason.c_str());
      } catch (const Error& e) {
        std::printf(" %s%-18s %-10s %-6s %10s %10s %12s  failed: %s\n", mark.c_str(),
                    c.name.c_str(), ops::conv_backend_name(c.backend),
                    c.deterministic ? "yes" : "no", "-", "-", "-", e.what());
      }
    }
  }
  std::cout << "\n* = the algorithm the current policy runs first. Time: median of " << a.repeats
            << " runs. Error: max |out - float64 direct| / max |reference|.\n";
  return 0;
}

}  // namespace

Runner add_algos(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "algos", "Time every convolution algorithm for one problem and compare its error");
  auto a = std::make_shared<AlgosArgs>();
  // Sizes, strides and groups fit an int, as the kernels' and cuDNN's descriptors take them.
  const int64_t kMax = std::numeric_limits<int32_t>::max();
  cmd->add_option("--input", a->input, "input shape N C H W")
      ->expected(4)
      ->capture_default_str()
      ->transform(integer_in(1, kMax));
  cmd->add_option("--weight", a->weight, "weight shape K C/groups R S")
      ->expected(4)
      ->capture_default_str()
      ->transform(integer_in(1, kMax));
  cmd->add_option("--stride", a->stride)->capture_default_str()->transform(integer_in(1, kMax));
  cmd->add_option("--padding", a->padding)->capture_default_str()->transform(integer_in(0, kMax));
  cmd->add_option("--dilation", a->dilation)->capture_default_str()->transform(integer_in(1, kMax));
  cmd->add_option("--groups", a->groups)->capture_default_str()->transform(integer_in(1, kMax));
  cmd->add_option("--dtype", a->dtype, "float32 or float64")->capture_default_str();
  cmd->add_option("--device", a->device, "cpu, cuda[:N] or emu[:N]")->capture_default_str();
  cmd->add_option("--repeats", a->repeats, "timed runs per algorithm")
      ->capture_default_str()
      ->transform(integer_in(1, 1000000));
  return [cmd, a]() -> int {
    if (!cmd->parsed()) return -1;
    return run_algos(*a);
  };
}

}  // namespace ember::cli

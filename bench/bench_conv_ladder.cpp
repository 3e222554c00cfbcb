// The convolution ladder: the same layers through each algorithm in the order a kernel writer
// climbs them (docs/conv.md, "The convolution ladder", says what each rung teaches):
//   direct → im2col_gemm (cpu) → implicit_gemm → winograd_f2x2_3x3 → winograd_f4x4_3x3 → fft
// then any other registered algorithm, and on cuda cuDNN's fastest FMA algorithm (FindEx) as the
// vendor rung. Every rung is forced by name through the public op (ops::set_conv_algo,
// ops::conv2d), so it runs exactly what a user gets; a rung the registry says cannot run a layer
// shows the registry's reason. Each output is checked against a float64 reference at sampled
// positions (bench/reference/conv_spec.h); a rung outside the tolerance prints WRONG and the run
// exits 1. Timing: the median of --reps calls after two warm-ups (events on a GPU, a steady clock
// on the cpu; on emu host time: the emu rows check the path, they do not measure a GPU).
// After the tables, a summary: per rung the geometric mean of its fraction of each layer's best
// rung, and how often the heuristic's own pick was within 1.10x of the best.
//
//   bench_conv_ladder [--device cpu|cuda[:N]|emu[:N]] [--model resnet20,resnet50,vgg16,large]
//                     [--batch N] [--small] [--reps N]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/validate.h"
#include "ladder.h"
#include "ops/conv2d.h"
#include "reference/conv_spec.h"
#if EMBER_BENCH_CUDNN
#include "reference/cudnn_conv.h"
#endif
#include "runtime/gpu.h"
#include "runtime/rng.h"
#include "runtime/tensor.h"

namespace {

using namespace ember;
using bench::ConvSpec;
using bench::Ladder;

// The rungs in climbing order; an algorithm registered under another name runs after them.
const char* const kRungs[] = {"direct",
                              "im2col_gemm",
                              "implicit_gemm",
                              "winograd_f2x2_3x3",
                              "winograd_f4x4_3x3",
                              "winograd_f2x2_3x3_fused",
                              "fft"};

// Relative to each output's sum |x w|: float32 rounding of the longest reductions here, with
// room for Winograd F(4x4)'s and the FFT's larger (documented) error.
constexpr double kTolerance = 1e-4;

struct Layer {
  std::string model;
  ConvSpec spec;  // n is set from --batch
};

// The convolution layers of each model (stride-1 3x3 layers first, then its downsampling ones);
// `large` holds the large-kernel layers the FFT is for.
std::vector<Layer> model_layers(const std::string& model) {
  // {n, c, h, w, k, r, s, stride, pad}
  std::vector<ConvSpec> s;
  if (model == "resnet20")  // CIFAR-10, 32x32 input
    s = {{0, 16, 32, 32, 16, 3, 3, 1, 1},
         {0, 32, 16, 16, 32, 3, 3, 1, 1},
         {0, 64, 8, 8, 64, 3, 3, 1, 1},
         {0, 16, 32, 32, 32, 3, 3, 2, 1},
         {0, 32, 16, 16, 64, 3, 3, 2, 1}};
  else if (model == "resnet50")  // ImageNet, the 3x3 convolutions of the four stages
    s = {{0, 64, 56, 56, 64, 3, 3, 1, 1},
         {0, 128, 28, 28, 128, 3, 3, 1, 1},
         {0, 256, 14, 14, 256, 3, 3, 1, 1},
         {0, 512, 7, 7, 512, 3, 3, 1, 1},
         {0, 128, 56, 56, 128, 3, 3, 2, 1}};
  else if (model == "vgg16")  // ImageNet, one layer per stage and the first
    s = {{0, 3, 224, 224, 64, 3, 3, 1, 1},    {0, 64, 224, 224, 64, 3, 3, 1, 1},
         {0, 128, 112, 112, 128, 3, 3, 1, 1}, {0, 256, 56, 56, 256, 3, 3, 1, 1},
         {0, 512, 28, 28, 512, 3, 3, 1, 1},   {0, 512, 14, 14, 512, 3, 3, 1, 1}};
  else  // large
    s = {{0, 32, 64, 64, 32, 7, 7, 1, 3},
         {0, 32, 64, 64, 32, 9, 9, 1, 4},
         {0, 16, 64, 64, 16, 13, 13, 1, 6}};
  std::vector<Layer> layers;
  for (const ConvSpec& spec : s) layers.push_back({model, spec});
  return layers;
}

// The same layer shrunk for the emulator: a few channels, at most 11x11 pixels (odd, so edge
// tiles occur), the kernel, stride and padding kept.
ConvSpec small_spec(ConvSpec s) {
  s.c = std::min<int64_t>(s.c, 3 + s.c / 64);
  s.k = std::min<int64_t>(s.k, 5 + s.k / 64);
  s.h = std::min<int64_t>(s.h, std::max<int64_t>(11, s.r + 2));
  s.w = s.h;
  return s;
}

struct Options {
  Device device{DeviceType::CUDA, 0};
  std::vector<std::string> models{"resnet20", "resnet50", "vgg16", "large"};
  int64_t batch = 0;  // 0: 32 on cuda, 1 elsewhere
  bool small = false;
  int reps = 5;
};

// One rung's fractions of the best over the layers it ran on.
struct RungSummary {
  double log_sum = 0;
  int ran = 0, layers = 0;
};

class ConvLadder {
 public:
  explicit ConvLadder(Options o) : o_(std::move(o)) {}

  int run() {
    bool ok = true;
    for (const std::string& model : o_.models)
      for (Layer& layer : model_layers(model)) {
        layer.spec.n = o_.batch;
        if (o_.small) layer.spec = small_spec(layer.spec);
        ok = run_layer(layer) && ok;
      }
    print_summary();
    std::printf("\nbench_conv_ladder: done%s\n", ok ? "" : " (WRONG results above)");
    return ok ? 0 : 1;
  }

 private:
  bool run_layer(const Layer& layer) {
    const ConvSpec& s = layer.spec;
    const Tensor x = randn({s.n, s.c, s.h, s.w}, {kFloat32, o_.device}, &gen_);
    const Tensor w = randn({s.k, s.c, s.r, s.s}, {kFloat32, o_.device}, &gen_);
    const bench::ConvSampleReference check(s, x.to_vector<float>(), w.to_vector<float>(),
                                           bench::sample_positions(s.shape().y_numel(), 2048));
    Ladder l(layer.model + " conv2d fwd fp32 " + s.str() + " on " + o_.device.str(), "GFLOP/s",
             s.flops(), kTolerance, [&](const std::vector<float>& y) { return check.error(y); });

    ops::Conv2dParams p;
    p.stride = {s.stride, s.stride};
    p.padding = {s.pad, s.pad};
    const ops::ConvKey key =
        ops::conv2d_key(ops::ConvDirection::forward, x.shape(), w.shape(), kFloat32, o_.device, p);
    const ops::ConvSelection sel = ops::explain_conv_algos(key);  // the heuristic's ranking

    std::vector<std::string> order(std::begin(kRungs), std::end(kRungs));
    for (const ops::ConvCandidate& c : sel.candidates)
      if (std::find(order.begin(), order.end(), c.name) == order.end()) order.push_back(c.name);
    Tensor out;
    for (const std::string& name : order) {
      const auto cand = std::find_if(sel.candidates.begin(), sel.candidates.end(),
                                     [&](const ops::ConvCandidate& c) { return c.name == name; });
      if (cand == sel.candidates.end()) {
        l.skip(name, false, "not registered in this build");
        continue;
      }
      if (!cand->supported) {
        l.skip(name, false, cand->reason);
        continue;
      }
      ops::set_conv_algo(name);
      l.rung(o_.device, o_.reps, name, false, &out, [&] { out = ops::conv2d(x, w, Tensor(), p); });
      ops::set_conv_algo("");
    }
    vendor_rung(l, s, x, w);
    const bool ok = l.print();
    note_layer(l, sel.chosen);
    return ok;
  }

  void vendor_rung(Ladder& l, const ConvSpec& s, const Tensor& x, const Tensor& w) {
#if EMBER_BENCH_CUDNN
    if (o_.device.is_cuda()) {
      Tensor y = empty({s.n, s.k, s.out_h(), s.out_w()}, {kFloat32, o_.device});
      const auto p = [](const Tensor& t) { return static_cast<float*>(t.data_ptr()); };
      try {
        auto ref = std::make_shared<bench::CudnnConv>(s, o_.device.index, p(x), p(w), p(y),
                                                      size_t{1} << 30);
        l.rung(o_.device, o_.reps, "cuDNN " + ref->algo_name() + " (FMA)", true, &y,
               [&] { ref->run(p(x), p(w), p(y)); });
      } catch (const std::exception& e) {
        l.skip("cuDNN", true, e.what());
      }
      return;
    }
#endif
    (void)s, (void)x, (void)w;
    if (o_.device.is_cuda()) l.skip("cuDNN", true, "built without cuDNN");
  }

  // Adds the layer's rungs to the summary, and prints the heuristic's pick against the best.
  void note_layer(const Ladder& l, const std::string& heuristic) {
    const double best = l.best_rate();
    double picked = 0;
    for (const bench::Rung& r : l.rungs()) {
      if (r.vendor) continue;
      RungSummary& sum = summary_[r.name];
      ++sum.layers;
      if (!r.failure.empty() || r.wrong || best <= 0) continue;
      ++sum.ran;
      sum.log_sum += std::log(l.rate(r) / best);
      if (r.name == heuristic) picked = l.rate(r);
    }
    if (best <= 0) return;
    ++layers_;
    if (picked >= best / 1.10) ++heuristic_within_;
    std::printf("heuristic picks %s: %s of the best rung\n",
                heuristic.empty() ? "nothing" : heuristic.c_str(),
                picked > 0 ? bench::fmt("%.2f", picked / best).c_str() : "-");
  }

  void print_summary() const {
    std::printf(
        "\n== summary over %d layers on %s: geometric mean of each rung's fraction of the "
        "best rung, over the layers it ran on\n",
        layers_, o_.device.str().c_str());
    std::printf("%-24s %8s %10s\n", "rung", "of best", "ran on");
    auto print = [&](const std::string& name) {
      const auto it = summary_.find(name);
      if (it == summary_.end()) return;
      const RungSummary& s = it->second;
      const std::string frac = s.ran > 0 ? bench::fmt("%.2f", std::exp(s.log_sum / s.ran)) : "-";
      std::printf("%-24s %8s %6d/%-3d\n", name.c_str(), frac.c_str(), s.ran, s.layers);
    };
    for (const char* name : kRungs) print(name);
    for (const auto& [name, s] : summary_)
      if (std::find(std::begin(kRungs), std::end(kRungs), name) == std::end(kRungs)) print(name);
    std::printf(
        "heuristic's pick within 1.10x of the best rung on %d of %d layers%s\n", heuristic_within_,
        layers_,
        o_.device.is_emu() ? " (emu: host time, which says nothing of a GPU's ranking)" : "");
  }

  Options o_;
  Generator gen_{1234};
  std::map<std::string, RungSummary> summary_;
  int layers_ = 0, heuristic_within_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "The convolution ladder: each model's convolution layers through every algorithm, forced "
      "by name, from direct up to Winograd and FFT (and cuDNN on cuda); each checked against a "
      "float64 reference (WRONG and exit 1 outside the tolerance) and timed. docs/conv.md, "
      "\"The convolution ladder\", explains the rungs.",
      "bench_conv_ladder");
  Options o;
  std::string device = "cuda";
  app.add_option("--device", device, "cpu, cuda[:N] or emu[:N] (emu needs --small)")
      ->capture_default_str()
      ->check(cli::device_of({DeviceType::CPU, DeviceType::CUDA, DeviceType::EMU}));
  app.add_option("--model", o.models, "models whose layers to run, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"resnet20", "resnet50", "vgg16", "large"}));
  app.add_option("--batch", o.batch, "batch size N (default: 32 on cuda, 1 elsewhere)")
      ->transform(cli::integer_in(1, 1024));
  app.add_flag("--small", o.small, "each layer shrunk to a few channels and pixels (emulator)");
  app.add_option("--reps", o.reps, "timed runs per rung (the median is shown)")
      ->capture_default_str()
      ->transform(cli::integer_in(1, 10000));
  CLI11_PARSE(app, argc, argv);
  o.device = Device::parse(device);
  if (o.batch == 0) o.batch = o.device.is_cuda() ? 32 : 1;
  if (o.device.is_emu() && !o.small) {
    std::fprintf(stderr,
                 "--device: emu runs the full layers for hours; add --small (emu timings are "
                 "host time, not GPU time)\n");
    return 2;
  }
  if (!o.device.is_cpu()) {
    try {
      gpu::require_device(o.device);
    } catch (const std::exception& e) {
      std::printf("bench_conv_ladder: %s unusable: %s\n", o.device.str().c_str(), e.what());
      return 1;
    }
  }
  std::printf("bench_conv_ladder on %s, batch %lld, median of %d timed runs per rung%s\n",
              o.device.str().c_str(), static_cast<long long>(o.batch), o.reps,
              o.device.is_emu() ? "; emu times are host time, not GPU time" : "");
  return ConvLadder(o).run();
}

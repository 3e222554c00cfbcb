// `ember algos`: every registered convolution algorithm side by side, for one convolution or for
// every convolution layer of a model, in every direction — whether it supports the problem (and
// why not), its workspace, its median time and GFLOP/s as the benchmark policy measures them, its
// largest and RMS error against a plain float64 loop, and which one the heuristic and the
// benchmark pick. With --model, how often the heuristic's pick was within 1.10x of the fastest.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "autograd/grad_mode.h"
#include "cli/algos_cudnn.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/validate.h"
#include "nn/models.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "runtime/rng.h"

namespace ember::cli {
namespace {

using ops::ConvDirection;

struct AlgosArgs {
  std::vector<int64_t> input{32, 16, 32, 32}, weight{16, 16, 3, 3};
  int64_t stride = 1, padding = 1, dilation = 1, groups = 1;
  std::string dtype = "float32", device = "cpu", policy = "heuristic", model, save, cudnn_device;
  bool allow_tf32 = false, show_dropped = false;
  int64_t batch = 8, image_size = 0, in_channels = 0;
  int repeats = ops::kConvBenchmarkRuns;
};

// How many of a model's (layer, direction) pairs the heuristic picked within 1.10x of the best.
constexpr double kNearBest = 1.10;
struct Summary {
  int rows = 0, near = 0;
  double heuristic_ms = 0, best_ms = 0;
  std::vector<std::string> misses;
  // Pairs where both Ember's kernels and cuDNN ran: the sum of log(Ember's fastest / cuDNN's).
  int versus = 0;
  double log_ratio = 0;
};

const ConvDirection kDirections[] = {ConvDirection::forward, ConvDirection::backward_data,
                                     ConvDirection::backward_filter};

ops::Conv2dParams params_of(const kernels::ConvShape& s) {
  ops::Conv2dParams p;
  p.stride = {s.stride_h, s.stride_w};
  p.padding = {s.pad_h, s.pad_w};
  p.dilation = {s.dil_h, s.dil_w};
  p.groups = s.groups;
  return p;
}

// The float64 reference of all three directions in one plain loop nest (scatter form), on host
// vectors: y = conv(x, w), dx = dL/dx and dw = dL/dw for dL/dy = dy. It shares nothing with the
// algorithms under test.
struct Reference {
  std::vector<double> y, dx, dw;
};
Reference reference(const kernels::ConvShape& s, const std::vector<double>& x,
                    const std::vector<double>& w, const std::vector<double>& dy) {
  const int64_t cg = s.cg(), kg = s.kg();
  Reference r;
  r.y.assign(s.y_numel(), 0.0);
  r.dx.assign(x.size(), 0.0);
  r.dw.assign(w.size(), 0.0);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k)
      for (int64_t i = 0; i < s.oh; ++i)
        for (int64_t j = 0; j < s.ow; ++j) {
          const int64_t yi = ((n * s.k + k) * s.oh + i) * s.ow + j;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t u = 0; u < s.r; ++u)
              for (int64_t v = 0; v < s.s; ++v) {
                const int64_t ih = i * s.stride_h - s.pad_h + u * s.dil_h;
                const int64_t iw = j * s.stride_w - s.pad_w + v * s.dil_w;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                const int64_t xi = ((n * s.c + (k / kg) * cg + c) * s.h + ih) * s.w + iw;
                const int64_t wi = ((k * cg + c) * s.r + u) * s.s + v;
                r.y[yi] += x[xi] * w[wi];
                r.dx[xi] += dy[yi] * w[wi];
                r.dw[wi] += dy[yi] * x[xi];
              }
        }
  return r;
}

// max |got - want| / max |want| and rms(got - want) / rms(want).
std::pair<double, double> errors(const std::vector<double>& got, const std::vector<double>& want) {
  double max_d = 0, max_w = 0, sum_d = 0, sum_w = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::abs(got[i] - want[i]);
    max_d = std::max(max_d, d), max_w = std::max(max_w, std::abs(want[i]));
    sum_d += d * d, sum_w += want[i] * want[i];
  }
  return {max_d / (max_w > 0 ? max_w : 1.0), std::sqrt(sum_d / (sum_w > 0 ? sum_w : 1.0))};
}

// Restores the registry settings that were in effect when it was made.
struct SettingsGuard {
  std::string forced = ops::forced_conv_algo();
  bool benchmark = ops::conv_benchmark(), deterministic = ops::conv_deterministic();
  ~SettingsGuard() {
    try {
      ops::set_conv_algo(forced);
      ops::set_conv_benchmark(benchmark);
      ops::set_conv_deterministic(deterministic);
    } catch (const Error&) {
    }
  }
};

// Operands of one convolution on the device, and the float64 reference.
struct Problem {
  kernels::ConvShape s;
  ops::Conv2dParams p;
  Shape xs, ws;
  Tensor x, w, dy;
  Reference ref;
};

Problem make_problem(const ops::ConvKey& key) {
  Problem pr;
  pr.s = key.shape;
  pr.p = params_of(pr.s);
  pr.xs = {pr.s.n, pr.s.c, pr.s.h, pr.s.w};
  pr.ws = {pr.s.k, pr.s.cg(), pr.s.r, pr.s.s};
  const Shape ys{pr.s.n, pr.s.k, pr.s.oh, pr.s.ow};
  manual_seed(0);
  // The operands in the key's dtype, and the float64 reference of those rounded values.
  const Tensor x = randn(pr.xs, kFloat64).to(key.dtype), w = randn(pr.ws, kFloat64).to(key.dtype),
               dy = randn(ys, kFloat64).to(key.dtype);
  pr.ref = reference(pr.s, x.to_vector<double>(), w.to_vector<double>(), dy.to_vector<double>());
  pr.x = x.to(key.device()), pr.w = w.to(key.device()), pr.dy = dy.to(key.device());
  return pr;
}

// Runs one direction with the algorithm currently forced; the result on the host in float64.
std::vector<double> run_direction(ConvDirection dir, const Problem& pr) {
  Tensor out;
  switch (dir) {
    case ConvDirection::forward:
      out = ops::conv2d(pr.x, pr.w, Tensor(), pr.p);
      break;
    case ConvDirection::backward_data:
      out = ops::conv2d_backward_data(pr.dy, pr.w, pr.xs, pr.p);
      break;
    case ConvDirection::backward_filter:
      out = ops::conv2d_backward_filter(pr.dy, pr.x, pr.ws, pr.p);
      break;
  }
  return out.to_vector<double>();
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void print_problem(const ops::ConvKey& key, const std::string& title) {
  const kernels::ConvShape& s = key.shape;
  std::cout << title << "conv2d x" << Shape{s.n, s.c, s.h, s.w} << " w"
            << Shape{s.k, s.cg(), s.r, s.s} << " -> y" << Shape{s.n, s.k, s.oh, s.ow} << ", stride "
            << s.stride_h << ", padding " << s.pad_h << ", dilation " << s.dil_h << ", groups "
            << s.groups << ", " << dtype_name(key.dtype) << " on " << key.device()
            << (key.deterministic ? ", deterministic algorithms only" : "") << "\n";
}

// One direction's table. Returns false when nothing could run it.
void print_direction(const ops::ConvKey& fwd_key, ConvDirection dir, const Problem& pr, int repeats,
                     Summary* summary, const std::string& layer) {
  ops::ConvKey key = fwd_key;
  key.direction = dir;
  const std::vector<double>& want = dir == ConvDirection::forward         ? pr.ref.y
                                    : dir == ConvDirection::backward_data ? pr.ref.dx
                                                                          : pr.ref.dw;
  const double flops = 2.0 * static_cast<double>(key.shape.macs());
  ops::set_conv_algo("");
  ops::set_conv_benchmark(false);
  const ops::ConvSelection heur = ops::explain_conv_algos(key);
  const ops::ConvSelection bench = ops::benchmark_conv_algos(key, repeats);
  std::printf("\n%s: heuristic picks %s, benchmark picks %s\n", ops::conv_direction_name(dir),
              heur.chosen.empty() ? "nothing" : heur.chosen.c_str(),
              bench.chosen.empty() ? "nothing" : bench.chosen.c_str());
  // cuDNN's own first choices, where its families have members (a cuda key on a GPU): what each
  // of its heuristics would run, next to Ember's selector's pick.
  std::string graph_pick, v7_pick;
  for (const ops::ConvCandidate& c : heur.candidates) {
    if (!c.supported || c.rank < 0) continue;
    if (c.backend == ops::ConvBackend::cudnn && graph_pick.empty()) graph_pick = c.name;
    if (c.backend == ops::ConvBackend::cudnn_legacy && v7_pick.empty()) v7_pick = c.name;
  }
  if (!graph_pick.empty() || !v7_pick.empty())
    std::printf("  cuDNN's heuristics pick: graph API (mode A) %s, v7 %s\n",
                graph_pick.empty() ? "nothing" : graph_pick.c_str(),
                v7_pick.empty() ? "nothing" : v7_pick.c_str());
  int width = 18;  // cuDNN's engine configs have long names
  for (const ops::ConvCandidate& c : bench.candidates)
    width = std::max(width, static_cast<int>(c.name.size()));
  std::printf("  %-*s %-9s %10s %10s %9s %9s %9s  %-9s %-9s  %s\n", width, "algorithm", "supported",
              "workspace", "median ms", "GFLOP/s", "max err", "rms err", "heuristic", "benchmark",
              "note");
  double best = std::numeric_limits<double>::infinity(), heur_ms = -1;
  double best_ember = best, best_cudnn = best;
  for (size_t i = 0; i < bench.candidates.size(); ++i) {
    const ops::ConvCandidate& c = bench.candidates[i];
    std::string ms = "-", gflops = "-", max_err = "-", rms_err = "-", note = c.reason;
    if (c.time_ms >= 0) {
      ms = fmt("%.4g", c.time_ms);
      gflops = c.time_ms > 0 ? fmt("%.3g", flops / (c.time_ms * 1e6)) : "-";
      best = std::min(best, c.time_ms);
      const bool cudnn =
          c.backend == ops::ConvBackend::cudnn || c.backend == ops::ConvBackend::cudnn_legacy;
      // widened_f32 is left out: its float32 run may be cuDNN's.
      if (c.name != ops::kHalfFallbackAlgo) {
        double& side = cudnn ? best_cudnn : best_ember;
        side = std::min(side, c.time_ms);
      }
      if (c.name == heur.chosen) heur_ms = c.time_ms;
    }
    if (c.supported) {
      try {
        ops::set_conv_algo(c.name);
        const auto [mx, rms] = errors(run_direction(dir, pr), want);
        max_err = fmt("%.2e", mx), rms_err = fmt("%.2e", rms);
      } catch (const Error& e) {
        note = std::string("failed: ") + e.what();
      }
      ops::set_conv_algo("");
    }
    std::printf("  %-*s %-9s %10s %10s %9s %9s %9s  %-9s %-9s  %s\n", width, c.name.c_str(),
                c.supported ? "yes" : "no",
                c.supported ? format_bytes(c.workspace_bytes).c_str() : "-", ms.c_str(),
                gflops.c_str(), max_err.c_str(), rms_err.c_str(), c.name == heur.chosen ? "*" : "",
                c.name == bench.chosen ? "*" : "", note.c_str());
  }
  if (summary == nullptr || !std::isfinite(best)) return;
  if (std::isfinite(best_ember) && std::isfinite(best_cudnn) && best_cudnn > 0 && best_ember > 0) {
    ++summary->versus;
    summary->log_ratio += std::log(best_ember / best_cudnn);
  }
  ++summary->rows;
  summary->best_ms += best;
  if (heur_ms >= 0) summary->heuristic_ms += heur_ms;
  if (heur_ms >= 0 && heur_ms <= kNearBest * best) {
    ++summary->near;
  } else {
    summary->misses.push_back(
        layer + " " + ops::conv_direction_name(dir) + ": heuristic " +
        (heur.chosen.empty() ? "nothing" : heur.chosen) +
        (heur_ms >= 0 ? " " + fmt("%.2f", heur_ms / best) + "x" : " untimed") + " the fastest (" +
        bench.chosen + ")");
  }
}

// The input side a model is run at unless --image-size says: 28 for lenet, 224 for the ImageNet
// models, 32 for the CIFAR ones.
int64_t default_image_size(const std::string& model) {
  if (model == "lenet") return 28;
  if (model == "resnet50" || model == "vgg16") return 224;
  return 32;
}

// The forward keys of a model's convolution layers on `dev` in `dt` at batch a.batch, in the
// order the forward pass meets them (repeated shapes once). The shapes come from one float32
// pass of one image on the cpu, under the heuristic, with no graph recorded (cheap even for
// VGG-16 at 224 x 224, and for a device as slow as the emulator); each is then keyed anew.
std::vector<ops::ConvKey> model_keys(const AlgosArgs& a, DType dt, Device dev) {
  nn::ModelSpec spec;
  spec.in_channels = a.in_channels > 0 ? a.in_channels : (a.model == "lenet" ? 1 : 3);
  spec.image_size = a.image_size > 0 ? a.image_size : default_image_size(a.model);
  std::vector<kernels::ConvShape> shapes;
  {
    nn::ModulePtr model = nn::make_model(a.model, spec);
    model->eval();  // batch norm with running statistics: the layers see the same shapes
    SettingsGuard settings;
    ops::set_conv_algo("");
    ops::set_conv_benchmark(false);
    ops::clear_conv_algo_cache();
    NoGradGuard no_grad;
    manual_seed(0);
    model->forward(randn({1, spec.in_channels, spec.image_size, spec.image_size}));
    for (const ops::ConvKey& k : ops::conv_keys_seen())
      if (k.direction == ConvDirection::forward) shapes.push_back(k.shape);
  }
  std::vector<ops::ConvKey> keys;
  for (const kernels::ConvShape& s : shapes) {
    ops::Conv2dParams p;
    p.stride = {s.stride_h, s.stride_w};
    p.padding = {s.pad_h, s.pad_w};
    p.dilation = {s.dil_h, s.dil_w};
    p.groups = s.groups;
    keys.push_back(ops::conv2d_key(ConvDirection::forward, {a.batch, s.c, s.h, s.w},
                                   {s.k, s.cg(), s.r, s.s}, dt, dev, p));
  }
  return keys;
}

// --cudnn-device: cuDNN's ranking of every key on the described GPU; nothing runs.
int run_cudnn_ranking(const AlgosArgs& a, std::vector<ops::ConvKey> keys) {
  CudnnRankingTotals totals;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string layer = "layer " + std::to_string(i + 1) + "/" + std::to_string(keys.size());
    const bool half = keys[i].dtype == kFloat16 || keys[i].dtype == kBFloat16;
    keys[i].math = half           ? ops::ConvMathMode::tensor_op
                   : a.allow_tf32 ? ops::ConvMathMode::tf32
                                  : ops::ConvMathMode::fp32;
    keys[i].device_type = DeviceType::CUDA;  // the described GPU's
    keys[i].device_index = 0;
    std::cout << "\n";
    print_problem(keys[i], a.model.empty() ? "" : layer + ": ");
    std::fflush(stdout);
    print_cudnn_ranking(keys[i], a.cudnn_device, a.show_dropped, layer, &totals);
  }
  std::printf("\n%d of %d (layer, direction) pairs have a config to try\n",
              totals.rows - static_cast<int>(totals.without.size()), totals.rows);
  for (const std::string& w : totals.without) std::printf("  none for %s\n", w.c_str());
  return totals.without.empty() ? 0 : 1;
}

int run_algos(const AlgosArgs& a) {
  const DType dt = parse_dtype(a.dtype);
  const Device dev = Device::parse(a.device);
  if (!a.save.empty()) {  // refuse an unwritable file before the work, not after
    const bool existed = std::ifstream(a.save).good();
    const bool writable = std::ofstream(a.save, std::ios::app).good();
    if (writable && !existed) std::remove(a.save.c_str());
    EMBER_CHECK_VALUE(writable, "algos: --save: cannot write '", a.save, "'");
  }
  SettingsGuard settings;
  const ops::ConvPolicy policy = ops::parse_conv_policy(a.policy, "--policy");
  ops::set_conv_policy(policy);
  std::vector<ops::ConvKey> keys;
  if (!a.model.empty()) {
    keys = model_keys(a, dt, dev);
    EMBER_CHECK_VALUE(!keys.empty(), "algos: model ", a.model, " has no convolution layers");
    std::cout << a.model << ": " << keys.size() << " distinct convolution layer shapes, batch "
              << a.batch << ", policy " << a.policy << "\n";
  } else {
    ops::Conv2dParams p;
    p.stride = {a.stride, a.stride};
    p.padding = {a.padding, a.padding};
    p.dilation = {a.dilation, a.dilation};
    p.groups = a.groups;
    keys.push_back(
        ops::conv2d_key(ConvDirection::forward, Shape(a.input), Shape(a.weight), dt, dev, p));
  }
  if (!a.cudnn_device.empty()) return run_cudnn_ranking(a, keys);
  Summary summary;
  Progress progress(static_cast<int64_t>(keys.size()) * 3, "algos", stderr);
  int64_t done = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string layer = "layer " + std::to_string(i + 1) + "/" + std::to_string(keys.size());
    std::cout << "\n";
    print_problem(keys[i], a.model.empty() ? "" : layer + ": ");
    const Problem pr = make_problem(keys[i]);
    for (ConvDirection dir : kDirections) {
      print_direction(keys[i], dir, pr, a.repeats, a.model.empty() ? nullptr : &summary, layer);
      std::fflush(stdout);
      ++done;
      progress.update(done, done, layer + " " + ops::conv_direction_name(dir));
    }
  }
  progress.finish(done, "");
  std::cout
      << "\nTime: median of " << a.repeats
      << " timed runs after a warm-up (the benchmark policy's measurement). Error: max |out - "
         "ref| / max |ref| and rms(out - ref) / rms(ref) against a float64 loop.\n";
  if (!a.model.empty()) {
    std::printf("\nheuristic within %.2fx of the fastest: %d of %d (layer, direction) pairs",
                kNearBest, summary.near, summary.rows);
    if (summary.best_ms > 0)
      std::printf("; heuristic's picks %.3g ms in all, the fastest %.3g ms (%.2fx)",
                  summary.heuristic_ms, summary.best_ms, summary.heuristic_ms / summary.best_ms);
    std::printf("\n");
    for (const std::string& m : summary.misses) std::printf("  %s\n", m.c_str());
    if (summary.versus > 0)
      std::printf(
          "Ember's fastest / cuDNN's fastest: %.2fx (geometric mean over %d pairs; below "
          "1: Ember's faster)\n",
          std::exp(summary.log_ratio / summary.versus), summary.versus);
  }
  if (!a.save.empty()) {
    const size_t n = ops::save_conv_cache(a.save);
    std::cout << "saved " << n << " measurement(s) to " << a.save
              << " (use it with EMBER_CONV_CACHE=" << a.save << " EMBER_CONV_POLICY=benchmark)\n";
  }
  return 0;
}

}  // namespace

Runner add_algos(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "algos",
      "Compare every convolution algorithm for one convolution or a model's layers: support, "
      "workspace, time, error against float64, and the heuristic's and the benchmark's picks");
  cmd->footer(
      "\nExamples:\n"
      "  ember algos --input 8,16,32,32 --weight 32,16,3,3 --stride 2\n"
      "  ember algos --model resnet20 --batch 8 --policy benchmark --save conv_cache.json\n"
      "  ember algos --model resnet50 --batch 32 --cudnn-device data/cudnn/h200.json\n"
      "  EMBER_CONV_CACHE=conv_cache.json EMBER_CONV_POLICY=benchmark ember train ...");
  auto a = std::make_shared<AlgosArgs>();
  // Sizes, strides and groups fit an int, as the kernels' and cuDNN's descriptors take them.
  const int64_t kMax = std::numeric_limits<int32_t>::max();
  auto* input = cmd->add_option("--input", a->input, "input shape N C H W (or N,C,H,W)")
                    ->expected(4)
                    ->delimiter(',')
                    ->capture_default_str()
                    ->transform(integer_in(1, kMax));
  auto* weight = cmd->add_option("--weight", a->weight, "weight shape K C/groups R S (or K,C,R,S)")
                     ->expected(4)
                     ->delimiter(',')
                     ->capture_default_str()
                     ->transform(integer_in(1, kMax));
  std::vector<CLI::Option*> shape_opts = {input, weight};
  shape_opts.push_back(cmd->add_option("--stride", a->stride)
                           ->capture_default_str()
                           ->transform(integer_in(1, kMax)));
  shape_opts.push_back(cmd->add_option("--padding", a->padding)
                           ->capture_default_str()
                           ->transform(integer_in(0, kMax)));
  shape_opts.push_back(cmd->add_option("--dilation", a->dilation)
                           ->capture_default_str()
                           ->transform(integer_in(1, kMax)));
  shape_opts.push_back(cmd->add_option("--groups", a->groups)
                           ->capture_default_str()
                           ->transform(integer_in(1, kMax)));
  auto* model = cmd->add_option("--model", a->model,
                                "every convolution layer of a model instead of one shape")
                    ->transform(one_of({"lenet", "resnet20", "vgg_small", "resnet50", "vgg16"}));
  for (CLI::Option* o : shape_opts) model->excludes(o);
  cmd->add_option("--batch", a->batch, "--model: batch size")
      ->capture_default_str()
      ->transform(integer_in(1, 4096))
      ->needs(model);
  cmd->add_option("--image-size", a->image_size,
                  "--model: input side (default 28 for lenet, 224 for resnet50 and vgg16, 32 "
                  "otherwise)")
      ->transform(integer_in(1, 4096))
      ->needs(model);
  cmd->add_option("--in-channels", a->in_channels,
                  "--model: input channels (default 1 for lenet, 3 otherwise)")
      ->transform(integer_in(1, 4096))
      ->needs(model);
  cmd->add_option("--dtype", a->dtype,
                  "the operands' dtype; float16 and bfloat16 list the half algorithms (Tensor "
                  "Cores, cuDNN's tensor-op engines) and their float32 fallback")
      ->capture_default_str()
      ->transform(one_of({"float32", "float64", "float16", "bfloat16"}));
  cmd->add_option("--device", a->device, "cpu, cuda[:N] or emu[:N]")
      ->capture_default_str()
      ->transform(cli::device_of({DeviceType::CPU, DeviceType::CUDA, DeviceType::EMU}));
  cmd->add_option("--policy", a->policy,
                  "the policy the keys are made under (deterministic: deterministic algorithms "
                  "only)")
      ->capture_default_str()
      ->transform(one_of({"heuristic", "benchmark", "deterministic"}));
  cmd->add_option("--repeats", a->repeats, "timed runs per algorithm (the median is shown)")
      ->capture_default_str()
      ->transform(integer_in(ops::kConvBenchmarkRuns, 1000000));
  auto* cudnn_device =
      cmd->add_option("--cudnn-device", a->cudnn_device,
                      "print cuDNN's ranked engine configs for the GPU this JSON describes "
                      "(data/cudnn/h200.json, a100.json) instead of timing; no GPU needed")
          ->check(CLI::ExistingFile);
  cmd->add_flag("--allow-tf32", a->allow_tf32,
                "--cudnn-device: let float32 use tensor-core (TF32) engines")
      ->needs(cudnn_device);
  cmd->add_flag("--show-dropped", a->show_dropped,
                "--cudnn-device: list the configs the policy refuses too")
      ->needs(cudnn_device);
  cmd->add_option("--save", a->save,
                  "write the benchmark's measurements to this file (a cache for EMBER_CONV_CACHE)")
      ->excludes(cudnn_device);
  return [cmd, a]() -> int {
    if (!cmd->parsed()) return -1;
    return run_algos(*a);
  };
}

}  // namespace ember::cli

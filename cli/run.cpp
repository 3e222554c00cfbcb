// `ember run model.onnx`: load an ONNX model, feed it inputs (.npy, .safetensors or random),
// run it N times and print the outputs (shape, dtype, checksum), the latency (median, p90) and
// the peak memory; --profile adds the time of every node and the kernels (the convolution
// algorithms) each one ran.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "autograd/copy.h"
#include "cli/commands.h"
#include "cli/validate.h"
#include "nn/npy.h"
#include "nn/serialize.h"
#include "onnx/model.h"
#include "ops/creation.h"
#include "runtime/error.h"
#include "runtime/rng.h"
#include "runtime/threads.h"

namespace ember::cli {
namespace {

struct RunArgs {
  std::string model, device = "cpu", output;
  std::vector<std::string> inputs;
  int64_t repeat = 10, batch = 1, threads = 0;  // threads 0: all
  uint64_t seed = 0;
  bool profile = false, no_optimize = false;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

#ifdef EMBER_WITH_ONNX
// A random tensor for a declared input: symbolic dims take --batch (the first) or fail.
Tensor random_input(const onnx::ValueInfo& info, int64_t batch) {
  if (!info.has_shape)
    EMBER_THROW(ValueError, "input '", info.name, "' declares no shape: give it as a .npy or ",
                ".safetensors file with --input");
  Shape shape;
  for (size_t d = 0; d < info.shape.size(); ++d) {
    if (info.shape[d] >= 0) shape.push_back(info.shape[d]);
    else if (d == 0) shape.push_back(batch);
    else
      EMBER_THROW(ValueError, "input '", info.name, "' has a symbolic dim ", d, " besides the ",
                  "batch: give it as a .npy or .safetensors file with --input");
  }
  const DType t = info.dtype.value_or(kFloat32);
  if (t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16) return to(randn(shape), t);
  return to(ops::randint(0, 10, shape), t);  // ids, indices: small non-negative integers
}

std::vector<Tensor> read_inputs(const onnx::Model& model, const RunArgs& args) {
  const auto& infos = model.inputs();
  std::vector<Tensor> inputs(infos.size());
  if (args.inputs.size() == 1 && ends_with(args.inputs[0], ".safetensors")) {
    const auto file = load_safetensors(args.inputs[0]);
    for (size_t i = 0; i < infos.size(); ++i) inputs[i] = file.at(infos[i].name);
    return inputs;
  }
  if (!args.inputs.empty() && args.inputs.size() != infos.size())
    EMBER_THROW(ValueError, "the model takes ", infos.size(), " input(s), --input gave ",
                args.inputs.size(), " (one per input, in order, or one .safetensors file)");
  manual_seed(args.seed);
  for (size_t i = 0; i < infos.size(); ++i) {
    const std::string spec = args.inputs.empty() ? "random" : args.inputs[i];
    if (spec == "random") inputs[i] = random_input(infos[i], args.batch);
    else if (ends_with(spec, ".npy")) inputs[i] = load_npy(spec);
    else
      EMBER_THROW(ValueError, "--input '", spec, "': expected random, a .npy file or a ",
                  ".safetensors file");
  }
  return inputs;
}

std::string mib(size_t bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return s.str();
}

int run_model(const RunArgs& args) {
  if (args.threads > 0) set_num_threads(static_cast<int>(args.threads));
  onnx::LoadOptions opts;
  opts.device = Device::parse(args.device);
  opts.optimize = !args.no_optimize;
  auto t0 = std::chrono::steady_clock::now();
  onnx::Model model = onnx::load(args.model, opts);
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto& p = model.passes();
  std::cout << args.model << ": opset " << model.opset() << ", " << model.num_nodes()
            << " nodes on " << model.device() << " (loaded in " << std::fixed
            << std::setprecision(1) << load_ms << " ms; passes: " << p.folded_constants
            << " constants folded, " << p.folded_batch_norms << " batch norms folded, "
            << p.fused_relus << " relus fused, " << p.fused_clips << " clips fused, "
            << p.fused_adds << " adds fused, "
            << p.removed_nodes << " dead nodes removed)\n";
  const auto inputs = read_inputs(model, args);
  for (size_t i = 0; i < inputs.size(); ++i)
    std::cout << "  input  " << model.inputs()[i].name << ": " << inputs[i].shape() << " "
              << dtype_name(inputs[i].dtype()) << "\n";
  std::vector<Tensor> outputs = model.run(inputs);  // warm-up (and the outputs)
  std::vector<double> ms;
  size_t peak = model.last_run().peak_bytes;
  for (int64_t r = 0; r < args.repeat; ++r) {
    outputs = model.run(inputs);
    ms.push_back(model.last_run().ms);
    peak = std::max(peak, model.last_run().peak_bytes);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor host = to(outputs[i], kCPU, kFloat64);
    double sum = 0, abs_sum = 0;
    for (double v : host.to_vector<double>()) {
      sum += v;
      abs_sum += std::fabs(v);
    }
    std::cout << "  output " << model.outputs()[i].name << ": " << outputs[i].shape() << " "
              << dtype_name(outputs[i].dtype()) << "  sum " << std::setprecision(6) << sum
              << "  sum|x| " << abs_sum << "\n";
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * (ms.size() - 1) + 0.5))]; };
  std::cout << std::setprecision(3) << "latency over " << ms.size() << " runs: median " << pct(0.5)
            << " ms, p90 " << pct(0.9) << " ms\npeak memory " << mib(peak) << " (weights "
            << mib(model.last_run().weight_bytes) << ")\n";
  if (args.profile) {
    // --repeat runs more, each node's time the median of its runs: one run's times swing by
    // several times on a machine shared with other work.
    model.set_profiling(true);
    model.run(inputs);
    auto nodes = model.last_run().nodes;
    std::vector<std::vector<double>> node_ms(nodes.size());
    for (int64_t r = 0; r < args.repeat; ++r) {
      if (r > 0) model.run(inputs);
      const auto& run = model.last_run().nodes;
      for (size_t i = 0; i < nodes.size() && i < run.size(); ++i) node_ms[i].push_back(run[i].ms);
    }
    model.set_profiling(false);
    double total = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      std::vector<double>& v = node_ms[i];
      std::sort(v.begin(), v.end());
      nodes[i].ms = v[v.size() / 2];
      total += nodes[i].ms;
    }
    std::stable_sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
    std::cout << "profile (each node's median over " << args.repeat
              << " runs, the device synchronised after each node; slowest first; sum "
              << std::setprecision(3) << total << " ms):\n";
    for (const auto& n : nodes) {
      // Names longer than their column still leave a space before the kernels.
      std::cout << "  " << std::setw(9) << std::setprecision(3) << n.ms << " ms  " << std::left
                << std::setw(20) << n.op_type << std::setw(27) << n.node << " " << std::right;
      for (size_t k = 0; k < n.calls.size(); ++k) std::cout << (k ? ", " : "") << n.calls[k];
      std::cout << "\n";
    }
  }
  if (!args.output.empty()) {
    if (ends_with(args.output, ".safetensors")) {
      NamedTensors named;
      for (size_t i = 0; i < outputs.size(); ++i) named.emplace_back(model.outputs()[i].name, outputs[i]);
      save_safetensors(args.output, named);
    } else if (ends_with(args.output, ".npy")) {
      if (outputs.size() != 1)
        EMBER_THROW(ValueError, "--output ", args.output, ": the model has ", outputs.size(),
                    " outputs and a .npy file holds one; use a .safetensors file");
      save_npy(args.output, outputs[0]);
    }
    std::cout << "wrote " << args.output << "\n";
  }
  return 0;
}

#else
int run_model(const RunArgs&) {
  EMBER_THROW(Error, "ember run: this build has no ONNX import (CMake found no ONNX or protobuf: ",
              "install libonnx-dev libprotobuf-dev and rebuild)");
}
#endif  // EMBER_WITH_ONNX

}  // namespace

Runner add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run an ONNX model: outputs, latency, peak memory");
  auto args = std::make_shared<RunArgs>();
  cmd->add_option("model", args->model, "the .onnx file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--input", args->inputs,
                  "one per model input, in order: random, a .npy file; or one .safetensors file "
                  "holding them by name (default: random)");
  cmd->add_option("--device", args->device, "cpu, cuda[:N] or emu[:N]")
      ->capture_default_str()
      ->transform(device_of({DeviceType::CPU, DeviceType::CUDA, DeviceType::EMU}));
  cmd->add_option("--repeat", args->repeat, "timed runs after one warm-up")
      ->capture_default_str()
      ->transform(integer_in(1, 100000));
  cmd->add_option("--batch", args->batch, "the batch size of random inputs with a symbolic first dim")
      ->capture_default_str()
      ->transform(integer_in(1, 1 << 20));
  cmd->add_option("--seed", args->seed, "seed of the random inputs")
      ->capture_default_str()
      ->transform(unsigned_in(0, UINT64_MAX));
  cmd->add_option("--output", args->output, "write the outputs to a .npy (one output) or "
                  ".safetensors file")
      ->check([](const std::string& s) {
        return ends_with(s, ".npy") || ends_with(s, ".safetensors")
                   ? std::string()
                   : "expected a file name ending in .npy or .safetensors, got '" + s + "'";
      });
  // set_num_threads takes an int; past a few thousand threads only oversubscribe.
  cmd->add_option("--threads", args->threads, "CPU threads (default 0: all, or OMP_NUM_THREADS)")
      ->transform(integer_in(0, 4096));
  cmd->add_flag("--profile", args->profile,
                "time every node over --repeat more runs (median) and name the kernels it ran");
  cmd->add_flag("--no-optimize", args->no_optimize, "skip the graph passes (folding, fusion)");
  return [cmd, args]() -> int {
    if (!cmd->parsed()) return -1;
    return run_model(*args);
  };
}

}  // namespace ember::cli

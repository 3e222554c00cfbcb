// Loading (read, check, place, optimise) and running an ONNX model (onnx/model.h).
#include "onnx/model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>

#include "autograd/copy.h"
#include "onnx/op_registry.h"
#include "onnx/passes.h"
#include "runtime/allocator.h"
#include "runtime/error.h"
#include "runtime/gpu.h"
#include "runtime/trace.h"

namespace ember::onnx {

// The graph as slots: every value a number; each step reads and writes slots and then
// releases the slots it was the last reader of (buffer reuse by liveness).
struct Model::Impl {
  Graph g;
  Device device;
  PassReport report;
  std::vector<Tensor> constants;  // by slot; undefined for computed values
  std::vector<int> input_slots, output_slots;
  struct Step {
    const Node* node;
    const OpDef* def;  // its operator, looked up once
    std::vector<int> in, out, release;
  };
  std::vector<Step> steps;
  size_t weight_bytes = 0;
  bool profiling = false;
  mutable std::mutex mu;
  mutable RunStats last;
};

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void plan(Model::Impl& m) {
  std::map<std::string, int> slot;
  auto slot_of = [&](const std::string& name) {
    auto [it, added] = slot.emplace(name, static_cast<int>(slot.size()));
    if (added) m.constants.emplace_back();
    return it->second;
  };
  for (const auto& [name, t] : m.g.initializers) {
    m.constants[slot_of(name)] = t;
    m.weight_bytes += static_cast<size_t>(t.numel()) * t.element_size();
  }
  for (const auto& in : m.g.inputs) m.input_slots.push_back(slot_of(in.name));
  for (const auto& node : m.g.nodes) {
    Model::Impl::Step s{&node, find_op(node.op_type), {}, {}, {}};
    for (const auto& in : node.inputs) s.in.push_back(in.empty() ? -1 : slot_of(in));
    for (const auto& out : node.outputs) s.out.push_back(out.empty() ? -1 : slot_of(out));
    m.steps.push_back(std::move(s));
  }
  for (const auto& out : m.g.outputs) m.output_slots.push_back(slot_of(out.name));
  // A computed value dies after its last reader, unless it is a graph output.
  std::vector<int> last(m.constants.size(), -1);
  for (size_t i = 0; i < m.steps.size(); ++i)
    for (int s : m.steps[i].in)
      if (s >= 0) last[s] = static_cast<int>(i);
  for (int s : m.output_slots) last[s] = -1;
  for (size_t s = 0; s < last.size(); ++s)
    if (last[s] >= 0 && !m.constants[s].defined()) m.steps[last[s]].release.push_back(static_cast<int>(s));
}

Model finish_load(Graph g, const LoadOptions& options, const std::string& source) {
  sort_and_check(g, source);
  check_supported(g, source);
  auto m = std::make_shared<Model::Impl>();
  m->device = options.device;
  for (auto& [name, t] : g.initializers) t = to(t, options.device);
  if (options.optimize) m->report = optimize(g, options.device);
  m->g = std::move(g);
  plan(*m);
  return Model(m);
}

void check_input(const ValueInfo& info, const Tensor& t) {
  if (!t.defined()) EMBER_THROW(ValueError, "onnx run: input '", info.name, "' is undefined");
  if (info.dtype && t.dtype() != *info.dtype)
    EMBER_THROW(DTypeError, "onnx run: input '", info.name, "' expects ", dtype_name(*info.dtype),
                ", got ", dtype_name(t.dtype()));
  if (!info.has_shape) return;
  bool ok = t.dim() == static_cast<int64_t>(info.shape.size());
  for (size_t d = 0; ok && d < info.shape.size(); ++d)
    ok = info.shape[d] < 0 || info.shape[d] == t.size(static_cast<int64_t>(d));
  if (!ok) {
    std::string want = "[";
    for (size_t d = 0; d < info.shape.size(); ++d)
      want += (d ? ", " : "") + (info.shape[d] < 0 ? std::string("?") : std::to_string(info.shape[d]));
    EMBER_THROW(ShapeError, "onnx run: input '", info.name, "' expects shape ", want, "], got ",
                t.shape());
  }
}

}  // namespace

Model load(const std::string& path, const LoadOptions& options) {
  const std::string bytes = read_file(path);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return finish_load(read_model(bytes.data(), bytes.size(), dir.empty() ? "." : dir, path),
                     options, path);
}

Model load_from_memory(const void* data, size_t size, const LoadOptions& options) {
  return finish_load(read_model(data, size, "", "model in memory"), options, "model in memory");
}

std::vector<Tensor> Model::run(const std::vector<Tensor>& inputs) const {
  const Impl& m = *impl_;
  if (inputs.size() != m.g.inputs.size())
    EMBER_THROW(ValueError, "onnx run: the model takes ", m.g.inputs.size(), " input",
                m.g.inputs.size() == 1 ? "" : "s", ", got ", inputs.size());
  std::vector<Tensor> v = m.constants;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_input(m.g.inputs[i], inputs[i]);
    v[m.input_slots[i]] = to(inputs[i], m.device);
  }
  RunStats stats;
  stats.weight_bytes = m.weight_bytes;
  bool profiling;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    profiling = m.profiling;
  }
  Allocator& alloc = allocator_for(m.device);
  alloc.reset_peak();
  const bool gpu = m.device.type != DeviceType::CPU;
  // Profiling: the op trace hands each kernel call to `calls`, collected per node.
  auto calls = std::make_shared<std::vector<std::string>>();
  struct TraceGuard {
    bool on;
    ~TraceGuard() {
      if (on) trace::stop();
    }
  } guard{profiling};
  if (profiling)
    trace::start([calls](const char*, const std::string& name, Device, const std::string&, double) {
      if (std::find(calls->begin(), calls->end(), name) == calls->end()) calls->push_back(name);
    });
  const auto t0 = Clock::now();
  for (const auto& step : m.steps) {
    const auto t_node = profiling ? Clock::now() : Clock::time_point();
    calls->clear();
    std::vector<Tensor> in;
    in.reserve(step.in.size());
    for (int s : step.in) in.push_back(s < 0 ? Tensor() : v[s]);
    // The values this node reads last leave their slots first, so that an input nothing else
    // holds can take the node's result (OpArgs::owned).
    for (int s : step.release) v[s] = Tensor();
    std::vector<Tensor> out = run_node(*step.node, m.g.opset, m.device, std::move(in), step.def);
    for (size_t k = 0; k < step.out.size(); ++k) {
      if (step.out[k] < 0) continue;
      if (k >= out.size() || !out[k].defined())
        EMBER_THROW(ValueError, step.node->op_type, " node '", step.node->name, "': output ", k,
                    " ('", step.node->outputs[k], "') is not produced by Ember's ", step.node->op_type);
      v[step.out[k]] = std::move(out[k]);
    }
    if (profiling) {
      if (gpu) gpu::backend(m.device).device_synchronize(m.device.index);
      stats.nodes.push_back({step.node->name, step.node->op_type, ms_since(t_node), *calls});
    }
  }
  if (gpu) gpu::backend(m.device).device_synchronize(m.device.index);
  stats.ms = ms_since(t0);
  stats.peak_bytes = alloc.stats().peak_allocated;
  std::vector<Tensor> outputs;
  for (int s : m.output_slots) outputs.push_back(v[s]);
  std::lock_guard<std::mutex> lock(m.mu);
  m.last = std::move(stats);
  return outputs;
}

std::map<std::string, Tensor> Model::run(const std::map<std::string, Tensor>& inputs) const {
  std::vector<Tensor> ordered;
  for (const auto& info : impl_->g.inputs) {
    auto it = inputs.find(info.name);
    if (it == inputs.end()) EMBER_THROW(ValueError, "onnx run: input '", info.name, "' is missing");
    ordered.push_back(it->second);
  }
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const auto& info : impl_->g.inputs) known = known || info.name == name;
    if (!known) EMBER_THROW(ValueError, "onnx run: the model has no input '", name, "'");
  }
  auto out = run(ordered);
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < out.size(); ++i) named[impl_->g.outputs[i].name] = out[i];
  return named;
}

const std::vector<ValueInfo>& Model::inputs() const { return impl_->g.inputs; }
const std::vector<ValueInfo>& Model::outputs() const { return impl_->g.outputs; }
Device Model::device() const { return impl_->device; }
int64_t Model::opset() const { return impl_->g.opset; }
int64_t Model::num_nodes() const { return static_cast<int64_t>(impl_->g.nodes.size()); }
const PassReport& Model::passes() const { return impl_->report; }
void Model::set_profiling(bool on) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->profiling = on;
}
RunStats Model::last_run() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->last;
}

}  // namespace ember::onnx

// The `cudnn` convolution family (Note [Algorithm families] in ops/conv2d_algo.h): on a cuda key,
// one member per engine config cuDNN's heuristics rank for it (mode A's list, then FALLBACK's,
// less what the policy refuses: ops/cudnn/graph.h), each run through its execution plan. Without
// cuDNN, a GPU or a usable cuDNN, the family is one row saying why.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <list>
#include <mutex>
#include <unordered_map>

#include "ember/build_config.h"
#include "ops/conv2d_cudnn.h"
#include "runtime/cudnn_versions.h"
#include "runtime/gpu.h"

#if EMBER_HAVE_CUDNN
#include "ops/cudnn/descriptors.h"
#include "ops/cudnn/graph.h"
#endif

namespace ember::ops {
namespace {

constexpr const char* kFamily = "cudnn";

#if EMBER_HAVE_CUDNN

// EMBER_CUDNN=0 turns cuDNN off (1, or unset, leaves it on); anything else is an error.
bool cudnn_enabled_by_env() {
  const char* v = std::getenv("EMBER_CUDNN");
  if (v == nullptr || std::strcmp(v, "1") == 0 || v[0] == '\0') return true;
  EMBER_CHECK_VALUE(std::strcmp(v, "0") == 0, "EMBER_CUDNN: invalid value '", v,
                    "': expected 0 (cuDNN off) or 1 (on)");
  return false;
}

// Why cuDNN cannot serve this process (the verdict of runtime/cudnn_versions.h, made once), or "".
// Said once on stderr, since the convolutions then run on Ember's kernels.
const std::string& cudnn_off_reason() {
  static const std::string reason = [] {
    gpu::Backend& cuda = gpu::backend(DeviceType::CUDA);
    const gpu::Availability a = cuda.availability();
    if (!a.usable) return "cuDNN runs on cuda devices only: " + a.reason;
    std::vector<std::pair<int, int>> gpus;
    for (int i = 0; i < cuda.device_count(); ++i) {
      const gpu::DeviceProps p = cuda.properties(i);
      gpus.emplace_back(p.major, p.minor);
    }
    const CudnnVerdict v = cudnn_verdict(loaded_cudnn_libs(), gpu::cuda_driver_version(), gpus);
    if (!v.usable)
      std::cerr << "ember: cuDNN is off: " << v.reason << "; convolutions run on Ember's kernels\n";
    return v.reason;
  }();
  return reason;
}

// One engine config for one key.
class Engine final : public ConvAlgo {
 public:
  Engine(const ConvKey& key, cudnn::RankedConfig r, int rank)
      : ConvAlgo(r.config.name(), !r.config.has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)),
        key_(key),
        ranked_(std::move(r)),
        rank_(rank) {}

  ConvBackend backend(DeviceType) const override { return ConvBackend::cudnn; }
  bool supports(const ConvKey& key, std::string* why) const override {
    if (key == key_) return true;
    *why = "ranked by cuDNN for another convolution";
    return false;
  }
  size_t workspace_bytes(const ConvKey&) const override {
    return static_cast<size_t>(ranked_.workspace);
  }
  double cost(const ConvKey&) const override { return rank_ + 1.0; }
  std::string rank_note(const ConvKey&) const override {
    return std::string("cuDNN's heuristics, ") +
           (std::strcmp(ranked_.list, "A") == 0 ? "mode A" : "FALLBACK list") + ", rank " +
           std::to_string(rank_ + 1);
  }
  std::string plan(const ConvKey&) const override {
    std::string notes = cudnn::numerical_notes(ranked_.config.numerical);
    const std::string behavior = cudnn::behavior_notes(ranked_.config.behavior);
    if (!behavior.empty()) notes += (notes.empty() ? "" : "; ") + behavior;
    return "cuDNN engine " + std::to_string(ranked_.config.engine) +
           (notes.empty() ? "" : " (" + notes + ")");
  }

  void run_forward(const ConvKey& key, const void* x, const void* w, const void* bias, void* y,
                   ConvWorkspace ws) const override {
    EMBER_CHECK_T(ops::ConvNotSupported, bias == nullptr, name(),
                  ": the bias is added apart (the fused graph is conv + bias + activation)");
    run(key, x, w, y, ws);
  }
  void run_backward_data(const ConvKey& key, const void* dy, const void* w, void* dx,
                         ConvWorkspace ws) const override {
    run(key, dy, w, dx, ws);
  }
  void run_backward_filter(const ConvKey& key, const void* dy, const void* x, void* dw,
                           ConvWorkspace ws) const override {
    run(key, dy, x, dw, ws);
  }

 private:
  void run(const ConvKey& key, const void* a, const void* b, void* out, ConvWorkspace ws) const;

  ConvKey key_;
  cudnn::RankedConfig ranked_;
  int rank_;
};

// Note [cuDNN plan cache]: plans are made once per (key, config) and thread (cuDNN's plans are not
// safe to share between threads), at most kPlansPerThread of them, least recently used dropped.
constexpr size_t kPlansPerThread = 256;

struct PlanCache {
  using Entry = std::pair<std::pair<ConvKey, std::string>, std::shared_ptr<cudnn::ConvPlan>>;
  std::list<Entry> lru;  // most recent first

  std::shared_ptr<cudnn::ConvPlan> get(const ConvKey& key, const std::string& name,
                                       cudnnHandle_t h) {
    for (auto it = lru.begin(); it != lru.end(); ++it)
      if (it->first.first == key && it->first.second == name) {
        lru.splice(lru.begin(), lru, it);
        return lru.front().second;
      }
    auto plan = std::make_shared<cudnn::ConvPlan>(key, name, h);
    lru.emplace_front(std::make_pair(key, name), plan);
    if (lru.size() > kPlansPerThread) lru.pop_back();
    return plan;
  }
};

void Engine::run(const ConvKey& key, const void* a, const void* b, void* out,
                 ConvWorkspace ws) const {
  const Device d = key.device();
  cudnnHandle_t h = cudnn::handle(d.index, gpu::current_stream(d));
  thread_local PlanCache plans;
  plans.get(key, name(), h)->execute(h, a, b, out, ws.data, ws.bytes);
}

#endif  // EMBER_HAVE_CUDNN

class Family final : public ConvAlgo {
 public:
  Family() : ConvAlgo(kFamily, true) {}
  ConvBackend backend(DeviceType) const override { return ConvBackend::cudnn; }
  bool is_family() const override { return true; }
  // "cudnn:eng<N>" or "cudnn:eng<N>{<type>=<value>,...}" (EngineConfig::name's form).
  bool owns(const std::string& name) const override {
    const std::string prefix = std::string(kFamily) + ":eng";
    if (name.rfind(prefix, 0) != 0) return false;
    size_t i = prefix.size();
    auto digits = [&](bool sign) {
      const size_t start = i;
      if (sign && i < name.size() && name[i] == '-') ++i;
      while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
      return i > start + ((sign && name[start] == '-') ? 1 : 0);
    };
    if (!digits(false)) return false;
    if (i == name.size()) return true;
    if (name[i++] != '{') return false;
    do {
      if (!digits(false) || i >= name.size() || name[i++] != '=' || !digits(true)) return false;
    } while (i < name.size() && name[i] == ',' && ++i);
    return i + 1 == name.size() && name[i] == '}';
  }
  bool supports(const ConvKey& key, std::string* why) const override {
    return !members(key, why).empty();
  }
  std::vector<ConvAlgoPtr> members(const ConvKey& key, std::string* why) const override;
  size_t workspace_bytes(const ConvKey&) const override { return 0; }
  double cost(const ConvKey&) const override { return 0; }
  void run_forward(const ConvKey&, const void*, const void*, const void*, void*,
                   ConvWorkspace) const override {
    refuse();
  }
  void run_backward_data(const ConvKey&, const void*, const void*, void*,
                         ConvWorkspace) const override {
    refuse();
  }
  void run_backward_filter(const ConvKey&, const void*, const void*, void*,
                           ConvWorkspace) const override {
    refuse();
  }

 private:
  [[noreturn]] static void refuse() {
    EMBER_THROW(ops::ConvNotSupported, "cudnn: run one of its engine configs, not the family");
  }
#if EMBER_HAVE_CUDNN
  mutable std::mutex mu_;
  // The members per key: cuDNN's heuristics cost about a millisecond per key.
  mutable std::unordered_map<ConvKey, std::vector<ConvAlgoPtr>, ConvKeyHash> cache_;
  mutable std::unordered_map<ConvKey, std::string, ConvKeyHash> refusals_;
#endif
};

std::vector<ConvAlgoPtr> Family::members(const ConvKey& key, std::string* why) const {
  if (key.device_type != DeviceType::CUDA) {
    *why = "cuDNN runs on cuda devices only";
    return {};
  }
#if EMBER_HAVE_CUDNN
  if (!cudnn_enabled_by_env()) {
    *why = "cuDNN is off (EMBER_CUDNN=0)";
    return {};
  }
  if (!cudnn_off_reason().empty()) {
    *why = cudnn_off_reason();
    return {};
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (auto it = refusals_.find(key); it != refusals_.end()) {
    *why = it->second;
    return {};
  }
  std::vector<ConvAlgoPtr> out;
  try {
    const Device d = key.device();
    cudnnHandle_t h = cudnn::handle(d.index, gpu::current_stream(d));
    const cudnn::ConvEngines engines =
        cudnn::conv_engines(key, *cudnn::DeviceDescription::of_handle(h));
    for (const cudnn::RankedConfig& r : engines.configs)
      if (r.refusal.empty() && r.workspace >= 0)
        out.push_back(std::make_shared<const Engine>(key, r, static_cast<int>(out.size())));
    if (out.empty()) *why = "cuDNN's heuristics returned no config it can plan and Ember allows";
  } catch (const Error& e) {
    *why = e.what();
  }
  if (out.empty()) {
    refusals_[key] = *why;
    return {};
  }
  return cache_[key] = out;
#else
  *why = "this build has no cuDNN";
  return {};
#endif
}

}  // namespace

CudnnRanking cudnn_ranking(const ConvKey& key, const std::string& device_file) {
#if EMBER_HAVE_CUDNN
  static std::mutex mu;
  static std::unordered_map<std::string, cudnn::DeviceDescriptionPtr> devices;
  cudnn::DeviceDescriptionPtr device;
  {
    std::lock_guard<std::mutex> lock(mu);
    cudnn::DeviceDescriptionPtr& d = devices[device_file];
    if (!d) d = cudnn::DeviceDescription::from_file(device_file);
    device = d;
  }
  const cudnn::ConvEngines engines = cudnn::conv_engines(key, *device);
  CudnnRanking out;
  out.device_name = device->name();
  out.device_source = device->source();
  out.global_count = engines.global_count;
  for (const cudnn::RankedConfig& r : engines.configs) {
    CudnnEngineRow row;
    row.name = r.config.name();
    row.list = r.list;
    row.notes = cudnn::numerical_notes(r.config.numerical);
    const std::string behavior = cudnn::behavior_notes(r.config.behavior);
    if (!behavior.empty()) row.notes += (row.notes.empty() ? "" : "; ") + behavior;
    row.refusal = r.refusal;
    row.workspace = r.workspace;
    row.plan_error = r.plan_error;
    out.rows.push_back(std::move(row));
  }
  return out;
#else
  (void)key;
  EMBER_THROW(Error, "cuDNN ranking for ", device_file, ": this build has no cuDNN");
#endif
}

ConvAlgoPtr cudnn_conv_family() {
  static const ConvAlgoPtr family = std::make_shared<const Family>();
  return family;
}

}  // namespace ember::ops

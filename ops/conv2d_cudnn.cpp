// The `cudnn` convolution family (Note [Algorithm families] in ops/conv2d_algo.h): on a cuda key,
// one member per engine config cuDNN's heuristics rank for it (mode A's list, then FALLBACK's,
// less what the policy refuses: ops/cudnn/graph.h), each run through its execution plan. Without
// cuDNN, a GPU or a usable cuDNN, the family is one row saying why.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "ember/build_config.h"
#include "ops/conv2d_cudnn.h"
#include "ops/dispatch.h"
#include "runtime/cudnn_versions.h"
#include "runtime/gpu.h"
#include "runtime/tensor.h"

#if EMBER_HAVE_CUDNN
#include "ops/cudnn/descriptors.h"
#include "ops/cudnn/graph.h"
#endif

namespace ember::ops {
namespace {

constexpr const char* kFamily = "cudnn";

// EMBER_CUDNN=0 turns cuDNN off (1, or unset, leaves it on); anything else is an error.
bool cudnn_enabled_by_env() {
  const char* v = std::getenv("EMBER_CUDNN");
  if (v == nullptr || std::strcmp(v, "1") == 0 || v[0] == '\0') return true;
  EMBER_CHECK_VALUE(std::strcmp(v, "0") == 0, "EMBER_CUDNN: invalid value '", v,
                    "': expected 0 (cuDNN off) or 1 (on)");
  return false;
}

struct Settings {
  std::mutex mu;
  std::optional<bool> enabled;  // set_cudnn_enabled; unset: EMBER_CUDNN
  bool allow_tf32 = false;
  BackendPreference preference[kCudnnOps] = {};  // per CudnnOp: prefer_cudnn
  bool bn_persistent = false;
};
Settings& settings() {
  static Settings s;
  return s;
}

// Runs f(settings) under their lock and returns what it returns.
template <typename F>
auto with_settings(F&& f) {
  Settings& s = settings();
  std::lock_guard<std::mutex> lock(s.mu);
  return f(s);
}

#if EMBER_HAVE_CUDNN

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

// y += bias, after an algorithm that computed the convolution alone.
void add_bias_on_cudnn(const ConvKey& key, const void* bias, void* y) {
  const Device d = key.device();
  cudnn::add_bias(cudnn::handle(d.index, gpu::current_stream(d)), key.shape, key.dtype, bias, y);
}

// Note [Half bias in one rounding]
// A half convolution rounds once, its bias included (Note [Half convolutions] in
// ops/conv2d_half.cpp). cuDNN's engines write the convolution in the output's dtype, so adding
// the bias after rounds twice: up to half an ulp of the convolution more, many ulps of the result
// where the bias cancels it (on an H200, float16 results 3 ulps off, and -0.0762 for -0.0754 in
// bfloat16). Blending the convolution into a y preset to the bias (cuDNN's beta 1) was no cure:
// engines 22, 45 and 47 still rounded twice there. cuDNN's fused graph (Note [Fused convolution
// graphs] in ops/cudnn/graph.cpp) keeps the convolution in float32 until the bias is added, and
// on the H200 it was exact on every case of tests/spec/conv2d_half.cpp; so conv2d runs a half key
// with a bias as that graph (ops/conv2d.cpp). Where the graph cannot be planned, a member refuses
// the bias and the registry's next candidate (Ember's kernels, which add the bias in float32)
// runs it; a forced member refuses it with that reason. Float32 and float64 keep the separate add:
// its rounding is within the accumulation's error.

// A member of a cuDNN family: one algorithm cuDNN ranked for one key, at `rank` (0: its first).
// run() computes the direction's output from its two operands (as ConvPlan::execute takes them);
// the bias, when there is one, is added after, except for half keys (Note [Half bias in one
// rounding]).
class Member : public ConvAlgo {
 public:
  Member(std::string name, bool deterministic, const ConvKey& key, int rank)
      : ConvAlgo(std::move(name), deterministic), key_(key), rank_(rank) {}
  bool supports(const ConvKey& key, std::string* why) const override {
    if (key == key_) return true;
    *why = "ranked by cuDNN for another convolution";
    return false;
  }
  double cost(const ConvKey&) const override { return rank_ + 1.0; }
  void run_forward(const ConvKey& key, const void* x, const void* w, const void* bias, void* y,
                   ConvWorkspace ws) const override {
    if (bias != nullptr && is_half(key.dtype))
      EMBER_THROW(ops::ConvNotSupported, name(),
                  ": a float16/bfloat16 convolution adds its bias before its one rounding; cuDNN "
                  "does that only in its fused conv + bias graph, which runs where no algorithm "
                  "is forced and it can be planned");
    run(key, x, w, y, ws);
    if (bias != nullptr) add_bias_on_cudnn(key, bias, y);
  }
  void run_backward_data(const ConvKey& key, const void* dy, const void* w, void* dx,
                         ConvWorkspace ws) const override {
    run(key, dy, w, dx, ws);
  }
  void run_backward_filter(const ConvKey& key, const void* dy, const void* x, void* dw,
                           ConvWorkspace ws) const override {
    run(key, dy, x, dw, ws);
  }

 protected:
  virtual void run(const ConvKey& key, const void* a, const void* b, void* out,
                   ConvWorkspace ws) const = 0;
  int rank() const { return rank_; }

 private:
  ConvKey key_;
  int rank_;
};

// One engine config for one key.
class Engine final : public Member {
 public:
  Engine(const ConvKey& key, cudnn::RankedConfig r, int rank)
      : Member(r.config.name(), !r.config.has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC), key, rank),
        ranked_(std::move(r)) {}

  ConvBackend backend(DeviceType) const override { return ConvBackend::cudnn; }
  size_t workspace_bytes(const ConvKey&) const override {
    return static_cast<size_t>(ranked_.workspace);
  }
  std::string rank_note(const ConvKey&) const override {
    return std::string("cuDNN's heuristics, ") +
           (std::strcmp(ranked_.list, "A") == 0 ? "mode A" : "FALLBACK list") + ", rank " +
           std::to_string(rank() + 1);
  }
  std::string plan(const ConvKey&) const override {
    std::string notes = cudnn::numerical_notes(ranked_.config.numerical);
    const std::string behavior = cudnn::behavior_notes(ranked_.config.behavior);
    if (!behavior.empty()) notes += (notes.empty() ? "" : "; ") + behavior;
    return "cuDNN engine " + std::to_string(ranked_.config.engine) +
           (notes.empty() ? "" : " (" + notes + ")");
  }

 private:
  void run(const ConvKey& key, const void* a, const void* b, void* out,
           ConvWorkspace ws) const override;

  cudnn::RankedConfig ranked_;
};

// Note [cuDNN's 16-byte alignment]: the engines' plans are built for 16-byte aligned tensors
// (CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT in ops/cudnn/graph.cpp), and a view that starts inside its
// allocation (a slice) may not be: on an H200, engine 28 refused such a 1x1 image with
// CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER. An unaligned operand is copied into an aligned
// buffer first; an unaligned output is written to one and copied back.
void Engine::run(const ConvKey& key, const void* a, const void* b, void* out,
                 ConvWorkspace ws) const {
  const Device d = key.device();
  const gpu::Stream stream = gpu::current_stream(d);
  const kernels::ConvShape& s = key.shape;
  // The element counts of (a, b, out): (x, w, y), (dy, w, dx) or (dy, x, dw).
  const int64_t na = key.direction == ConvDirection::forward ? s.x_numel() : s.y_numel();
  const int64_t nb = key.direction == ConvDirection::backward_filter ? s.x_numel() : s.w_numel();
  const int64_t nout = key.direction == ConvDirection::forward         ? s.y_numel()
                       : key.direction == ConvDirection::backward_data ? s.x_numel()
                                                                       : s.w_numel();
  const size_t item = itemsize(key.dtype);
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  auto staged = [&](const void* p, int64_t n) {
    if (aligned(p)) return Tensor();
    Tensor t = empty({n}, {key.dtype, d});
    gpu::backend(d).memcpy_async(t.data_ptr(), p, static_cast<size_t>(n) * item,
                                 gpu::CopyKind::DeviceToDevice, stream);
    return t;
  };
  const Tensor sa = staged(a, na), sb = staged(b, nb);
  const Tensor so = aligned(out) ? Tensor() : empty({nout}, {key.dtype, d});
  cudnnHandle_t h = cudnn::handle(d.index, stream);
  cudnn::thread_plans().get(key, name(), h)->execute(
      h, sa.defined() ? sa.data_ptr() : a, sb.defined() ? sb.data_ptr() : b,
      so.defined() ? so.data_ptr() : out, ws.data, ws.bytes);
  if (so.defined())
    gpu::backend(d).memcpy_async(out, so.data_ptr(), static_cast<size_t>(nout) * item,
                                 gpu::CopyKind::DeviceToDevice, stream);
}

#endif  // EMBER_HAVE_CUDNN

#if EMBER_HAVE_CUDNN

// One of cuDNN's classic algorithms for one key, as its v7 heuristic ranked it.
class Classic final : public Member {
 public:
  Classic(const ConvKey& key, cudnn::LegacyAlgo a, int rank)
      : Member("cudnn_v7:" + cudnn::legacy_algo_name(key.direction, a.algo), a.deterministic, key,
               rank),
        algo_(a) {}

  ConvBackend backend(DeviceType) const override { return ConvBackend::cudnn_legacy; }
  size_t workspace_bytes(const ConvKey&) const override { return algo_.memory; }
  std::string rank_note(const ConvKey&) const override {
    return "cuDNN's v7 heuristic, rank " + std::to_string(rank() + 1);
  }
  std::string plan(const ConvKey&) const override {
    return std::string("cuDNN classic algorithm ") + std::to_string(algo_.algo) + ", math " +
           cudnn::math_type_name(algo_.math);
  }

 private:
  void run(const ConvKey& key, const void* a, const void* b, void* out,
           ConvWorkspace ws) const override {
    const Device d = key.device();
    cudnnHandle_t h = cudnn::handle(d.index, gpu::current_stream(d));
    try {
      cudnn::legacy_run(h, key.direction, key.shape, key.dtype, algo_, a, b, out, ws.data,
                        ws.bytes);
    } catch (const CudnnError& e) {  // NOT_SUPPORTED, BAD_PARAM, EXECUTION_FAILED, ...
      EMBER_THROW(ops::ConvNotSupported, name(), ": ", e.what());
    }
  }

  cudnn::LegacyAlgo algo_;
};

// The members of `cudnn` for a key on a GPU: the engine configs the graph API ranks.
std::vector<ConvAlgoPtr> engine_members(const ConvKey& key, cudnnHandle_t h, std::string* why) {
  std::vector<ConvAlgoPtr> out;
  const cudnn::ConvEngines engines =
      cudnn::conv_engines(key, *cudnn::DeviceDescription::of_handle(h));
  for (const cudnn::RankedConfig& r : engines.configs)
    if (r.refusal.empty() && r.workspace >= 0)
      out.push_back(std::make_shared<const Engine>(key, r, static_cast<int>(out.size())));
  if (out.empty()) *why = "cuDNN's heuristics returned no config it can plan and Ember allows";
  return out;
}

// Workspaces this large are cuDNN's way of saying an algorithm cannot run (PyTorch treats them
// as out of memory).
constexpr size_t kAbsurdWorkspace = size_t{1} << 40;

// The members of `cudnn_v7`: the classic algorithms cuDNN's v7 heuristic finds usable, in its
// order, less those whose math type would break the precision asked for.
std::vector<ConvAlgoPtr> classic_members(const ConvKey& key, cudnnHandle_t h, std::string* why) {
  const bool tf32 = key.math == ConvMathMode::tf32;
  std::vector<ConvAlgoPtr> out;
  std::string dropped;
  for (const cudnn::LegacyAlgo& a :
       cudnn::legacy_heuristic(h, key.direction, key.shape, key.dtype, tf32)) {
    const std::string name = cudnn::legacy_algo_name(key.direction, a.algo);
    std::string no;
    if (a.status != CUDNN_STATUS_SUCCESS)
      no = cudnnGetErrorString(a.status);
    else if (key.dtype == DType::f32 && !tf32 && a.math != CUDNN_FMA_MATH)
      no = std::string("math type ") + cudnn::math_type_name(a.math) + " may use TF32";
    else if (a.memory >= kAbsurdWorkspace)
      no = "a workspace of 1 TiB or more, taken as out of memory";
    else if (name == "winograd_nonfused" && !(key.shape.r == 3 && key.shape.s == 3))
      no = "off for filters other than 3x3: on a 5x5 float32 convolution it was 2e-3 off float64 "
           "on an H200 (cuDNN 9.19)";
    if (!no.empty()) {
      dropped += (dropped.empty() ? "" : "; ") + name + ": " + no;
      continue;
    }
    out.push_back(std::make_shared<const Classic>(key, a, static_cast<int>(out.size())));
  }
  if (out.empty()) *why = "cuDNN's v7 heuristic left nothing usable (" + dropped + ")";
  return out;
}

#endif  // EMBER_HAVE_CUDNN

// A family of cuDNN's algorithms (Note [Algorithm families]): the gating both share (a cuda key,
// cuDNN on and usable, a handle), the members per key made once, and the name form it owns.
class Family final : public ConvAlgo {
 public:
#if EMBER_HAVE_CUDNN
  using Make = std::vector<ConvAlgoPtr> (*)(const ConvKey&, cudnnHandle_t, std::string*);
#else
  using Make = void*;
#endif
  using Owns = bool (*)(const std::string&);
  Family(const char* name, ConvBackend backend, Owns owns, Make make)
      : ConvAlgo(name, true), backend_(backend), owns_(owns), make_(make) {}
  ConvBackend backend(DeviceType) const override {
    return backend_;
  }
  bool is_family() const override {
    return true;
  }
  bool owns(const std::string& name) const override {
    return owns_(name);
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
  [[noreturn]] void refuse() const {
    EMBER_THROW(ops::ConvNotSupported, name(), ": run one of its members, not the family");
  }
  ConvBackend backend_;
  Owns owns_;
  Make make_;
  mutable std::mutex mu_;
  // The members per key: cuDNN's heuristics cost about a millisecond per key.
  mutable std::unordered_map<ConvKey, std::vector<ConvAlgoPtr>, ConvKeyHash> cache_;
  mutable std::unordered_map<ConvKey, std::string, ConvKeyHash> refusals_;
};

std::vector<ConvAlgoPtr> Family::members(const ConvKey& key, std::string* why) const {
  if (key.device_type != DeviceType::CUDA) {
    *why = "cuDNN runs on cuda devices only";
    return {};
  }
  if (!cudnn_enabled()) {
    *why =
        "cuDNN is off (set_cudnn_enabled(false), ember.backends.cudnn.enabled = False or "
        "EMBER_CUDNN=0)";
    return {};
  }
#if EMBER_HAVE_CUDNN
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
    if (const char* no = cudnn::conv_refusal(key.shape)) EMBER_THROW(ops::ConvNotSupported, no);
    const Device d = key.device();
    out = make_(key, cudnn::handle(d.index, gpu::current_stream(d)), why);
  } catch (const Error& e) {
    *why = e.what();
  }
  if (out.empty()) {
    refusals_[key] = *why;
    return {};
  }
  return cache_[key] = out;
#else
  (void)make_;
  *why = "this build has no cuDNN";
  return {};
#endif
}

// "cudnn:eng<N>" or "cudnn:eng<N>{<type>=<value>,...}" (EngineConfig::name's form).
bool owns_engine(const std::string& name) {
  const std::string prefix = "cudnn:eng";
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

// "cudnn_v7:<algorithm>" with one of the classic algorithms' names (legacy_algo_name).
bool owns_classic(const std::string& name) {
  static const char* const names[] = {
      "implicit_gemm", "implicit_precomp_gemm", "gemm",   "direct", "fft",   "fft_tiling",
      "winograd",      "winograd_nonfused",     "algo_0", "algo_1", "algo_3"};
  const std::string prefix = "cudnn_v7:";
  if (name.rfind(prefix, 0) != 0) return false;
  const std::string rest = name.substr(prefix.size());
  return std::any_of(std::begin(names), std::end(names), [&](const char* n) { return rest == n; });
}

}  // namespace

void set_cudnn_enabled(bool on) {
  with_settings([&](Settings& s) { s.enabled = on; });
  clear_conv_algo_cache();  // the rankings held cuDNN's algorithms, or did not
}

void reset_cudnn_enabled() {
  with_settings([](Settings& s) { s.enabled.reset(); });
  clear_conv_algo_cache();
}

bool cudnn_enabled() {
  return with_settings([](Settings& s) { return s.enabled ? *s.enabled : cudnn_enabled_by_env(); });
}

void set_conv_allow_tf32(bool on) {
  with_settings([&](Settings& s) { s.allow_tf32 = on; });
}

bool conv_allow_tf32() {
  return with_settings([](Settings& s) { return s.allow_tf32; });
}

void set_backend_preference(CudnnOp op, BackendPreference p) {
  with_settings([&](Settings& s) { s.preference[static_cast<int>(op)] = p; });
  if (op == CudnnOp::conv2d) clear_conv_algo_cache();
}

BackendPreference backend_preference(CudnnOp op) {
  return with_settings([&](Settings& s) { return s.preference[static_cast<int>(op)]; });
}

const char* cudnn_op_name(CudnnOp op) {
  static const char* const names[kCudnnOps] = {"conv2d", "activation", "softmax", "pooling",
                                               "batch_norm"};
  return names[static_cast<int>(op)];
}

CudnnOp parse_cudnn_op(const std::string& name) {
  for (int i = 0; i < kCudnnOps; ++i)
    if (name == cudnn_op_name(static_cast<CudnnOp>(i))) return static_cast<CudnnOp>(i);
  EMBER_THROW(ValueError, "cuDNN op: unknown op '", name,
              "'; expected conv2d, activation, softmax, pooling or batch_norm (the ops cuDNN "
              "runs)");
}

void set_cudnn_batch_norm_persistent(bool on) {
  with_settings([&](Settings& s) { s.bn_persistent = on; });
}

bool cudnn_batch_norm_persistent() {
  return with_settings([](Settings& s) { return s.bn_persistent; });
}

void set_conv_backend_preference(BackendPreference p) {
  set_backend_preference(CudnnOp::conv2d, p);
}

BackendPreference conv_backend_preference() {
  return backend_preference(CudnnOp::conv2d);
}

const std::string& cudnn_unusable_reason() {
#if EMBER_HAVE_CUDNN
  return cudnn_off_reason();
#else
  static const std::string reason = "this build has no cuDNN";
  return reason;
#endif
}

const char* backend_preference_name(BackendPreference p) {
  return p == BackendPreference::prefer_cudnn   ? "prefer-cudnn"
         : p == BackendPreference::prefer_ember ? "prefer-ember"
                                                : "benchmark";
}

BackendPreference parse_backend_preference(const std::string& name) {
  for (BackendPreference p : {BackendPreference::prefer_cudnn, BackendPreference::prefer_ember,
                              BackendPreference::benchmark})
    if (name == backend_preference_name(p)) return p;
  EMBER_THROW(ValueError, "backend preference: unknown value '", name,
              "'; expected prefer-cudnn, prefer-ember or benchmark");
}

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
#if EMBER_HAVE_CUDNN
  static const ConvAlgoPtr family =
      std::make_shared<const Family>(kFamily, ConvBackend::cudnn, owns_engine, engine_members);
#else
  static const ConvAlgoPtr family =
      std::make_shared<const Family>(kFamily, ConvBackend::cudnn, owns_engine, nullptr);
#endif
  return family;
}

ConvAlgoPtr cudnn_v7_conv_family() {
#if EMBER_HAVE_CUDNN
  static const ConvAlgoPtr family = std::make_shared<const Family>(
      "cudnn_v7", ConvBackend::cudnn_legacy, owns_classic, classic_members);
#else
  static const ConvAlgoPtr family =
      std::make_shared<const Family>("cudnn_v7", ConvBackend::cudnn_legacy, owns_classic, nullptr);
#endif
  return family;
}

}  // namespace ember::ops

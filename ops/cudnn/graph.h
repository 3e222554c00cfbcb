// Convolution through cuDNN's graph (backend) API (docs/gpu_backend.md, "cuDNN's engines"): one
// operation graph per key and direction, the engine configs cuDNN's heuristics rank for it, and
// execution plans made from them, for a real GPU (a handle) or for a GPU described in JSON (no GPU
// needed: how CI sees what cuDNN would choose on an H200). Raw C API; compiled only with cuDNN.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ops/conv2d_algo.h"

namespace ember::ops::cudnn {

// One backend descriptor, destroyed with it. Every call is checked (CudnnError saying `what`).
class BackendDescriptor {
 public:
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type);
  ~BackendDescriptor();
  BackendDescriptor(BackendDescriptor&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  BackendDescriptor& operator=(BackendDescriptor&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const void* values, const std::string& what);
  void set_int64(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v,
                 const std::string& what) {
    set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data(), what);
  }
  void set_descriptor(cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t d,
                      const std::string& what) {
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d, what);
  }
  void finalize(const std::string& what);
  // cudnnBackendFinalize's status, unchecked (a plan that cannot be made is an answer).
  cudnnStatus_t try_finalize();

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// A GPU as cuDNN's heuristics and plans see it. From the JSON of a device-property descriptor
// (the keys of docs/gpu_backend.md; Ember's files add "emberSource", saying where the numbers came
// from) or from a real device's handle.
class DeviceDescription {
 public:
  // Throws IOError when the file cannot be read, FormatError naming the file and every missing
  // key when it is not such a JSON object, and CudnnError with cuDNN's reason when cuDNN refuses
  // it.
  static std::shared_ptr<const DeviceDescription> from_file(const std::string& path);
  static std::shared_ptr<const DeviceDescription> from_json(const std::string& json,
                                                            const std::string& origin);
  // The device of `handle`, as cuDNN reads it from the driver; its JSON can be saved and used
  // on a machine without a GPU.
  static std::shared_ptr<const DeviceDescription> of_handle(cudnnHandle_t handle);

  const std::string& name() const { return name_; }      // "NVIDIA H200"
  int compute_capability() const { return cc_; }         // 90 for sm_90
  const std::string& source() const { return source_; }  // emberSource, or "" when captured
  const std::string& origin() const { return origin_; }  // the file, or "cuda device N"
  // cuDNN's JSON of the description (what of_handle captures).
  std::string json() const;
  cudnnBackendDescriptor_t get() const { return d_.get(); }

  explicit DeviceDescription(BackendDescriptor d) : d_(std::move(d)) {}

 private:
  BackendDescriptor d_;
  std::string name_, source_, origin_;
  int cc_ = 0;
};
using DeviceDescriptionPtr = std::shared_ptr<const DeviceDescription>;

// One engine configuration: an engine (its global index) and its knobs' values.
struct EngineConfig {
  int64_t engine = -1;
  std::vector<std::pair<int64_t, int64_t>> knobs;  // (cudnnBackendKnobType_t, value)
  uint32_t numerical = 0;                          // bit n: cudnnBackendNumericalNote_t n
  uint32_t behavior = 0;                           // bit n: cudnnBackendBehaviorNote_t n

  // "cudnn:eng38" or, with knobs, "cudnn:eng38{2=1,13=0,14=4}" (knob type = value).
  std::string name() const;
  bool has(cudnnBackendNumericalNote_t n) const { return (numerical >> n) & 1u; }
};

// "tensor core, non-deterministic" ("" when none); behaviour notes likewise.
std::string numerical_notes(uint32_t bits);
std::string behavior_notes(uint32_t bits);

// The prefix of every cuDNN graph-engine candidate's name.
constexpr const char* kEnginePrefix = "cudnn:eng";

// One config in the order the heuristic policy tries them: mode A's list, then FALLBACK's.
struct RankedConfig {
  EngineConfig config;
  const char* list = "A";  // "A" or "fallback"
  std::string refusal;     // why the policy drops it (empty when it is tried)
  int64_t workspace = -1;  // the plan's workspace in bytes (-1: no plan)
  std::string plan_error;  // why no plan could be made (cuDNN's status and reason)
};

struct ConvEngines {
  int64_t global_count = 0;           // engines cuDNN knows for this operation graph
  std::vector<RankedConfig> configs;  // duplicates of an earlier config left out
  size_t tried() const;               // those without a refusal
};

// Why the policy drops a config for `key`, or "": float32 keys refuse tensor-core engines (TF32)
// unless key.math allows TF32, and configs with a MULTIPLY knob (Note [cuDNN's MULTIPLY knob]);
// every key refuses DOWN_CONVERT_INPUTS and REDUCED_PRECISION_REDUCTION; deterministic keys
// refuse NONDETERMINISTIC.
std::string config_refusal(const ConvKey& key, const EngineConfig& c);

// What a forward graph computes after the convolution (Note [Fused convolution graphs]): nothing,
// + bias per channel, or relu(+ bias), the intermediates virtual (never in memory).
enum class ConvFusion : uint8_t { none, bias, bias_relu };

// Ranks cuDNN's engine configs for `key` (its direction's operation graph, with `fusion`'s
// epilogue) on `device`, and makes each tried config's plan for that device to learn its
// workspace. requires: conv_refusal(key.shape) == nullptr, a cuDNN dtype, and the forward
// direction for a fusion (ConvNotSupported / DTypeError otherwise).
ConvEngines conv_engines(const ConvKey& key, const DeviceDescription& device,
                         ConvFusion fusion = ConvFusion::none);

// The operation graph of one key's direction (Note [Convolution graphs] in graph.cpp).
struct ConvGraph;

// A plan that runs one config for one key on a real GPU, made through its handle.
class ConvPlan {
 public:
  // The config of that name among conv_engines(key, of_handle(handle), fusion) ("": the first
  // that makes a plan), or ConvNotSupported saying why there is none.
  ConvPlan(const ConvKey& key, const std::string& name, cudnnHandle_t handle,
           ConvFusion fusion = ConvFusion::none);
  int64_t workspace() const { return workspace_; }
  // Runs the plan; x, w, y are the direction's operands in Ember's order (forward: x, w, y;
  // backward_data: dy, w, dx; backward_filter: dy, x, dw).
  // A fused plan takes the bias too.
  void execute(cudnnHandle_t handle, const void* a, const void* b, void* out, void* workspace,
               size_t workspace_bytes, const void* bias = nullptr) const;

 private:
  std::shared_ptr<ConvGraph> graph_;
  std::shared_ptr<BackendDescriptor> plan_;
  ConvDirection direction_;
  ConvFusion fusion_;
  int64_t workspace_ = 0;
};

// Note [cuDNN plan cache]: plans are made once per (key, config, fusion) and thread (cuDNN's
// plans are not safe to share between threads), at most kPlansPerThread of them, the least
// recently used dropped.
constexpr size_t kPlansPerThread = 256;
class ConvPlanCache {
 public:
  // The plan of ConvPlan(key, name, h, fusion), made on first use.
  std::shared_ptr<ConvPlan> get(const ConvKey& key, const std::string& name, cudnnHandle_t h,
                                ConvFusion fusion = ConvFusion::none);

 private:
  struct Entry {
    ConvKey key;
    std::string name;
    ConvFusion fusion;
    std::shared_ptr<ConvPlan> plan;
  };
  std::list<Entry> lru_;  // most recent first
};
// The calling thread's cache.
ConvPlanCache& thread_plans();

}  // namespace ember::ops::cudnn

// The convolution algorithm registry: which algorithms exist, which of them can run a given
// convolution, and which one runs it (see docs/conv.md).
//
// A ConvKey describes one convolution completely (everything that can change the answer or the
// speed). Each ConvAlgo says whether it supports a key (per device, with the reason), how much
// workspace it needs, what it costs, and runs each direction through a function of its own
// (run_forward, run_backward_data, run_backward_filter). An algorithm that exists on several
// devices is one entry: `direct` and `implicit_gemm` run on cpu, cuda and emu through the
// devices' kernel tables; `im2col_gemm` is the cpu's alone. The registry lives in
// ops/conv2d_registry.cpp (how a policy ranks them in ops/conv2d_ranking.cpp), the built-in
// algorithms in ops/conv2d_algos.cpp.
// A policy ranks the supporting algorithms for a key:
//   heuristic     (default) lowest estimated cost first;
//   benchmark     every eligible candidate timed on scratch buffers the first time a key is
//                 seen, fastest first (set_conv_benchmark(true), like PyTorch's
//                 torch.backends.cudnn.benchmark); the measurements are cached per key and can
//                 be saved to and loaded from a file (ops/conv2d_cache.cpp, EMBER_CONV_CACHE);
//   deterministic only algorithms that give bit-identical results run to run
//                 (set_conv_deterministic(true)); with benchmark on as well, the benchmark
//                 times the deterministic algorithms only, as PyTorch does;
//   forced        exactly the named algorithm (set_conv_algo("direct") or EMBER_CONV_ALGO).
// set_conv_policy() or EMBER_CONV_POLICY picks heuristic, benchmark or deterministic in one go.
// The ranking is cached per key. Running tries the ranked algorithms in turn, skipping one that
// throws ConvNotSupported or OutOfMemory. explain_conv_algos() shows the ranking and the reasons;
// EMBER_LOG=select prints each new choice to stderr, with the chosen algorithm's plan (and under
// the benchmark policy every candidate's median time, or where a cached measurement came from).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/conv_shape.h"
#include "ops/conv2d_work.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

namespace ember::ops {

using kernels::ConvDirection;
using kernels::conv_direction_name;
// cudnn: the graph API's engines; cudnn_legacy: the classic (v7) algorithms.
enum class ConvBackend : uint8_t { cpu, ember_cuda, cudnn, cudnn_legacy };
enum class ConvMathMode : uint8_t { fp32, tf32, tensor_op };
enum class ConvLayout : uint8_t { nchw, nhwc };
enum class ConvPolicy : uint8_t { heuristic, deterministic, forced, benchmark };

const char* conv_backend_name(ConvBackend b);
const char* conv_policy_name(ConvPolicy p);
// "heuristic", "benchmark" or "deterministic" (the policies set_conv_policy takes). requires: one
// of those (ValueError naming `what`, the value and the allowed ones otherwise).
ConvPolicy parse_conv_policy(const std::string& name, const std::string& what = "conv policy");

// Note [ConvKey bytes]: the key is hashed and compared as raw bytes, so it has no padding
// (checked below) and every byte is a field; make_conv_key() starts from all zeros.
struct ConvKey {
  DeviceType device_type;
  DType dtype;
  ConvMathMode math;
  ConvLayout layout;
  ConvDirection direction;
  uint8_t deterministic;  // 1 when the deterministic policy is on
  int16_t device_index;
  kernels::ConvShape shape;  // the geometry, output size included (conv2d_key computes it once)

  Device device() const { return Device(device_type, device_index); }
};
static_assert(std::has_unique_object_representations_v<ConvKey>, "ConvKey must have no padding");
static_assert(std::is_trivially_copyable_v<ConvKey>);

bool operator==(const ConvKey& a, const ConvKey& b);
inline bool operator!=(const ConvKey& a, const ConvKey& b) {
  return !(a == b);
}
struct ConvKeyHash {
  size_t operator()(const ConvKey& k) const;
};
// "forward f32 cpu N2 C3 H9 W9 K4 R3 S3 stride 1x1 pad 0x0 dil 1x1 groups 1".
std::string conv_key_string(const ConvKey& k);

// Thrown by an algorithm's run function when it finds it cannot handle a key after all: the
// registry tries the next algorithm.
class ConvNotSupported : public Error {
  using Error::Error;
};

// An output clamp for inference: y = min(max(y + residual, lo), hi) (ReLU: [0, inf); ReLU6:
// [0, 6]), NaN kept, as ops::clamp. `residual`, when not null, is a contiguous tensor of y's
// shape and dtype, not overlapping y, added first (a residual block's shortcut).
// `packed_filters`, when not null, are w packed once for the cpu's implicit GEMM under the
// micro-kernels named `packed_isa` (ops::pack_conv2d_filters), which it uses instead of packing
// w where those are the ones in use; the other algorithms read w.
struct ConvClamp {
  double lo, hi;
  const void* residual = nullptr;
  const float* packed_filters = nullptr;
  const char* packed_isa = nullptr;
  // Whether the bounds move any value: not (-inf, inf), a residual alone.
  bool bounded() const {
    return lo != -std::numeric_limits<double>::infinity() ||
           hi != std::numeric_limits<double>::infinity();
  }
};

// Scratch memory for one run: workspace_bytes(key) bytes on the key's device (null when 0).
struct ConvWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
};

// One way to compute a convolution. Buffers are contiguous in the layouts of
// kernels/conv_shape.h (x, dx NCHW; w, dw KCRS; y, dy NCHW); outputs are written in full.
class ConvAlgo {
 public:
  ConvAlgo(std::string name, bool deterministic)
      : name_(std::move(name)), deterministic_(deterministic) {}
  virtual ~ConvAlgo() = default;

  const std::string& name() const { return name_; }
  // Bit-identical results run to run.
  bool deterministic() const { return deterministic_; }
  // Who runs it on a device type: Ember's cpu kernels, Ember's GPU kernels or a library.
  virtual ConvBackend backend(DeviceType device) const = 0;
  // requires: non-null `why`. ensures: false with the reason in *why when unsupported.
  virtual bool supports(const ConvKey& key, std::string* why) const = 0;
  virtual size_t workspace_bytes(const ConvKey& key) const = 0;
  // Estimated run time in arbitrary units, for the heuristic policy (lower is better).
  virtual double cost(const ConvKey& key) const = 0;
  // The work of one call on a GPU backend as the cost model counts it (ops/conv2d_work.h), the
  // forward with a bias when `bias`; no launches where nothing is counted (the cpu's kernels, a
  // library's algorithms). requires: supports(key).
  virtual ConvWork work(const ConvKey&, bool /*bias*/) const { return {}; }
  // How it would run `key`, in a few words (EMBER_LOG=select prints it with the choice); "" when
  // there is nothing to add. requires: supports(key).
  virtual std::string plan(const ConvKey&) const { return {}; }
  // Why the heuristic ranks it where it does, when not by cost(): a library's own ranking, e.g.
  // "cuDNN's heuristics, mode A, rank 2"; "" for the cost model's estimate.
  virtual std::string rank_note(const ConvKey&) const { return {}; }

  // Note [Algorithm families]: a family stands for algorithms made per key, such as cuDNN's engine
  // configs, which its library ranks anew for each problem. Where it has members, the registry
  // ranks those in its place (best first, in the family's order, named "<family>:..."); where it
  // has none, it is one row, not supported, with the reason. Forcing the family's name forces its
  // members in turn; forcing a member's name forces that one.
  virtual bool is_family() const { return false; }
  // requires: is_family(). ensures: the members for `key`, best first, or none with the reason
  // in *why (then supports(key) is false with the same reason).
  virtual std::vector<std::shared_ptr<const ConvAlgo>> members(const ConvKey&,
                                                               std::string* /*why*/) const {
    return {};
  }
  // Whether `name` has this family's form (it may still name no member for a given key).
  virtual bool owns(const std::string&) const { return false; }

  // requires: supports(key) for key.direction == forward; bias may be null.
  // ensures:  y = conv(x, w) (+ bias). Throws ConvNotSupported to hand over to the next one.
  virtual void run_forward(const ConvKey& key, const void* x, const void* w, const void* bias,
                           void* y, ConvWorkspace ws) const = 0;
  // The forward with y clamped (the residual added) as each block of it is written, while in
  // cache, where the algorithm can (the cpu's implicit GEMM, and the direct kernels without a
  // residual): true when it did; false (the default, nothing run) where it cannot, and
  // run_conv_forward adds and clamps after run_forward.
  virtual bool run_forward_clamped(const ConvKey&, const void* /*x*/, const void* /*w*/,
                                   const void* /*bias*/, void* /*y*/, ConvWorkspace,
                                   ConvClamp) const {
    return false;
  }
  // requires: supports(key) for key.direction == backward_data. ensures: dx = dL/dx from dy.
  virtual void run_backward_data(const ConvKey& key, const void* dy, const void* w, void* dx,
                                 ConvWorkspace ws) const = 0;
  // requires: supports(key) for key.direction == backward_filter. ensures: dw = dL/dw.
  virtual void run_backward_filter(const ConvKey& key, const void* dy, const void* x, void* dw,
                                   ConvWorkspace ws) const = 0;

 private:
  std::string name_;
  bool deterministic_;
};
using ConvAlgoPtr = std::shared_ptr<const ConvAlgo>;

// The built-in algorithms, in the order the registry starts with (ops/conv2d_algos.cpp).
std::vector<ConvAlgoPtr> builtin_conv_algos();
// The `cudnn` family: cuDNN's graph-API engine configs, `cudnn:eng<N>{knobs}`, on cuda devices
// (ops/conv2d_cudnn.cpp), part of the built-in ones.
ConvAlgoPtr cudnn_conv_family();
// The `cudnn_v7` family: cuDNN's classic algorithms, `cudnn_v7:implicit_precomp_gemm`, ..., as its
// v7 heuristic ranks them (ops/conv2d_cudnn.cpp), part of the built-in ones.
ConvAlgoPtr cudnn_v7_conv_family();
// winograd_f2x2_3x3 and winograd_f4x4_3x3 (ops/conv2d_winograd.cpp), part of the built-in ones.
std::vector<ConvAlgoPtr> winograd_conv_algos();
// implicit_gemm_tc and widened_f32, the float16/bfloat16 algorithms (ops/conv2d_half.cpp, Note
// [Half convolutions]), part of the built-in ones.
std::vector<ConvAlgoPtr> half_conv_algos();
// The algorithm every half key supports, which a forced algorithm with no half path runs on.
constexpr const char* kHalfFallbackAlgo = "widened_f32";
// The math a key asks for: tensor_op for float16/bfloat16 on cuda and emu (Tensor Cores with
// float32 sums), tf32 for float32 on cuda where set_conv_allow_tf32 allows it, fp32 otherwise.
ConvMathMode conv_math_mode(DType dtype, Device device);

// All registered algorithms, in registration order.
std::vector<std::string> conv_algo_names();
// The registered algorithm of that name, or null.
ConvAlgoPtr find_conv_algo(const std::string& name);
// Adds an algorithm. requires: a non-null algorithm with a new, non-empty name (ValueError
// otherwise).
void register_conv_algo(ConvAlgoPtr algo);
// Removes an algorithm by name; true when it was registered. Clears the selection cache.
bool unregister_conv_algo(const std::string& name);

// Forces every convolution to use `name`; "" clears the override (EMBER_CONV_ALGO, when set,
// applies again). Takes precedence over EMBER_CONV_ALGO. requires: a registered name (ValueError
// listing the valid ones otherwise).
void set_conv_algo(const std::string& name);
// The forced algorithm in effect (set_conv_algo, else EMBER_CONV_ALGO), or "".
std::string forced_conv_algo();
// Restricts selection to deterministic algorithms (it also sets ConvKey::deterministic).
void set_conv_deterministic(bool on);
bool conv_deterministic();

struct ConvCandidate {
  std::string name;
  ConvBackend backend = ConvBackend::cpu;
  bool deterministic = true;
  bool supported = false;
  bool chosen = false;  // the first one run() will try
  int rank = -1;        // order in which run() tries it; -1 when it will not be tried
  size_t workspace_bytes = 0;
  double cost = 0.0;
  std::string reason;     // why it is (not) chosen or ranked where it is
  double time_ms = -1.0;  // benchmark policy: the measured median (-1 when not measured)
};
struct ConvSelection {
  ConvPolicy policy = ConvPolicy::heuristic;
  std::vector<ConvCandidate> candidates;  // every registered algorithm, registration order
  std::string chosen;                     // "" when nothing can run the key
  std::string reason;                     // why `chosen` (or why nothing)
  // benchmark policy: where the measurements come from ("timed now", "cached, timed in this
  // process", "cached, loaded from FILE"); "" when nothing has been measured for the key.
  std::string source;
};

// The ranking the current policy gives `key`, with each algorithm's verdict. Never throws for an
// unsupported key or an unknown forced name: the reasons say so.
ConvSelection explain_conv_algos(const ConvKey& key);

// Run one direction with the best algorithm for `key` that succeeds, trying the next on
// ConvNotSupported or OutOfMemory. Each returns the name of the algorithm that ran.
// requires: key.direction is the function's direction (ValueError otherwise).
// Throws ValueError when the forced name is unknown or does not support the key (naming the
// ones that do), and ConvNotSupported when no algorithm can run the key.
// With `clamp`, y is clamped (the residual added) as well: by the algorithm where it can
// (run_forward_clamped), else in place after it.
std::string run_conv_forward(const ConvKey& key, const void* x, const void* w, const void* bias,
                             void* y, const ConvClamp* clamp = nullptr);
std::string run_conv_backward_data(const ConvKey& key, const void* dy, const void* w, void* dx);
std::string run_conv_backward_filter(const ConvKey& key, const void* dy, const void* x, void* dw);

// The forward ranking of one key held by a convolution prepared once (Note [Prepared
// convolutions] in ops/conv2d.cpp), and the registry's state it was made in.
struct ConvRanking;
struct ConvChoice {
  std::shared_ptr<const ConvRanking> ranking;
  uint64_t version = 0;  // of the registry's rankings (any made, replaced or cleared moves it)
};
// The ranking run_conv_forward follows for `key` (made now where it has none).
// requires: a forward key (ValueError otherwise).
ConvChoice conv_forward_choice(const ConvKey& key);
// Whether run_conv_forward would follow `choice` for `key` now: no ranking made, replaced or
// cleared since, and the same forced algorithm, policy and deterministic setting.
bool conv_choice_current(const ConvChoice& choice, const ConvKey& key);
// run_conv_forward along `choice`'s ranking, without looking the key up.
// requires: choice is conv_forward_choice(key).
std::string run_conv_forward_chosen(const ConvChoice& choice, const ConvKey& key, const void* x,
                                    const void* w, const void* bias, void* y,
                                    const ConvClamp* clamp = nullptr);

// Empties the per-key ranking cache and the benchmark's measurements (and re-reads
// EMBER_CONV_ALGO, EMBER_CONV_POLICY and EMBER_CONV_CACHE on next use).
void clear_conv_algo_cache();

// --- The benchmark policy (docs/conv.md, "The benchmark policy") -------------------------------

// Turns the benchmark policy on or off, leaving the deterministic flag alone (on together: the
// benchmark times deterministic algorithms only). Takes precedence over EMBER_CONV_POLICY.
void set_conv_benchmark(bool on);
// Whether the benchmark policy is on (set_conv_benchmark or set_conv_policy, else
// EMBER_CONV_POLICY=benchmark). Throws ValueError for a bad EMBER_CONV_POLICY.
bool conv_benchmark();
// heuristic: benchmark and deterministic off; benchmark: benchmark on, deterministic off;
// deterministic: deterministic on, benchmark off. Takes precedence over EMBER_CONV_POLICY; a forced
// algorithm (set_conv_algo) still overrides it. requires: not ConvPolicy::forced (ValueError:
// force an algorithm with set_conv_algo).
void set_conv_policy(ConvPolicy policy);
// The policy in effect: forced when an algorithm is forced, else benchmark, deterministic or
// heuristic. Throws ValueError for a bad EMBER_CONV_POLICY.
ConvPolicy conv_policy();

// Forgets the policy, the deterministic flag and the workspace limit set through the API, so that
// EMBER_CONV_POLICY and EMBER_CONV_WORKSPACE_LIMIT decide again (the forced algorithm is
// set_conv_algo("")'s to clear).
void reset_conv_settings();

// Candidates whose workspace is over this many bytes are neither ranked nor timed, under every
// policy but forced (default kConvDefaultWorkspaceLimit; EMBER_CONV_WORKSPACE_LIMIT=BYTES, with
// an optional K, M or G suffix in binary units, when not set here): the next candidate runs.
// Setting it clears the ranking cache.
constexpr size_t kConvDefaultWorkspaceLimit = size_t{1} << 30;  // 1 GiB
void set_conv_workspace_limit(size_t bytes);
// Throws ValueError for a bad EMBER_CONV_WORKSPACE_LIMIT.
size_t conv_workspace_limit();

// The timed runs per candidate the benchmark policy takes the median of (after one warm-up).
constexpr int kConvBenchmarkRuns = 5;

// Times every candidate eligible for `key` now (supported; deterministic when the key is; within
// the workspace limit), `runs` timed runs each after a warm-up, on scratch buffers of the key's
// shape on its device (GPU: events on the device's current stream; cpu: a steady clock). A
// candidate that throws ConvNotSupported or OutOfMemory is skipped with the reason. The result
// replaces the key's cached measurement (and is written to EMBER_CONV_CACHE when set).
// requires: runs >= kConvBenchmarkRuns (ValueError). ensures: a selection under the benchmark
// policy, every timed candidate's time_ms set, whatever the current policy.
ConvSelection benchmark_conv_algos(const ConvKey& key, int runs = kConvBenchmarkRuns);

// Counters of the benchmark's work since the process started (never reset), for tests and logs.
struct ConvBenchmarkStats {
  int64_t keys_timed = 0;        // keys whose candidates were timed
  int64_t candidates_timed = 0;  // candidates timed (each: a warm-up and the timed runs)
  int64_t cache_hits = 0;        // rankings made from a cached measurement
  int64_t entries_loaded = 0;    // measurements read from cache files
};
ConvBenchmarkStats conv_benchmark_stats();

// The keys of every convolution selected (run, or ranked for running) since the last
// clear_conv_algo_cache(), in the order first seen: a model's convolution layers after a pass.
std::vector<ConvKey> conv_keys_seen();

// Writes every cached benchmark measurement to `path` (the format of docs/conv.md: versioned
// JSON with a checksum, the library version, the algorithm set and each device's name), replacing
// the file atomically. Returns the number of entries. Throws IOError naming the file.
size_t save_conv_cache(const std::string& path);
// Reads a file save_conv_cache wrote and adds its measurements to the cache (replacing those of
// the same keys). Entries whose key no longer parses back to itself, or whose algorithms no longer
// support it, are ignored. Returns the number of entries taken. Throws IOError when the file cannot
// be read, and FormatError naming the file and the reason when it is garbage, truncated, fails its
// checksum, or is of another format version, library version, device or algorithm set; the cache
// is then unchanged.
size_t load_conv_cache(const std::string& path);

}  // namespace ember::ops

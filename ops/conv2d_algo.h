// The convolution algorithm registry: which algorithms exist, which of them can run a given
// convolution, and which one runs it (see docs/conv.md).
//
// A ConvKey describes one convolution completely (everything that can change the answer or the
// speed). Each ConvAlgo says whether it supports a key (per device, with the reason), how much
// workspace it needs, what it costs, and runs each direction through a function of its own
// (run_forward, run_backward_data, run_backward_filter). An algorithm that exists on several
// devices is one entry: `direct` and `implicit_gemm` run on cpu, cuda and emu through the
// devices' kernel tables; `im2col_gemm` is the cpu's alone. The registry lives in
// ops/conv2d_registry.cpp, the built-in algorithms in ops/conv2d_algos.cpp.
// A policy ranks the supporting algorithms for a key:
//   heuristic     (default) lowest estimated cost first;
//   deterministic only algorithms that give bit-identical results run to run
//                 (set_conv_deterministic(true));
//   forced        exactly the named algorithm (set_conv_algo("direct") or EMBER_CONV_ALGO).
// The ranking is cached per key. Running tries the ranked algorithms in turn, skipping one that
// throws ConvNotSupported or OutOfMemory. explain_conv_algos() shows the ranking and the reasons;
// EMBER_LOG=select prints each new choice to stderr, with the chosen algorithm's plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/conv_shape.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

namespace ember::ops {

using kernels::ConvDirection;
using kernels::conv_direction_name;
enum class ConvBackend : uint8_t { cpu, ember_cuda, cudnn };
enum class ConvMathMode : uint8_t { fp32, tf32, tensor_op };
enum class ConvLayout : uint8_t { nchw, nhwc };
enum class ConvPolicy : uint8_t { heuristic, deterministic, forced };

const char* conv_backend_name(ConvBackend b);
const char* conv_policy_name(ConvPolicy p);

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
  // How it would run `key`, in a few words (EMBER_LOG=select prints it with the choice); "" when
  // there is nothing to add. requires: supports(key).
  virtual std::string plan(const ConvKey&) const { return {}; }

  // requires: supports(key) for key.direction == forward; bias may be null.
  // ensures:  y = conv(x, w) (+ bias). Throws ConvNotSupported to hand over to the next one.
  virtual void run_forward(const ConvKey& key, const void* x, const void* w, const void* bias,
                           void* y, ConvWorkspace ws) const = 0;
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
// winograd_f2x2_3x3 and winograd_f4x4_3x3 (ops/conv2d_winograd.cpp), part of the built-in ones.
std::vector<ConvAlgoPtr> winograd_conv_algos();

// All registered algorithms, in registration order.
std::vector<std::string> conv_algo_names();
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
  std::string reason;  // why it is (not) chosen or ranked where it is
};
struct ConvSelection {
  ConvPolicy policy = ConvPolicy::heuristic;
  std::vector<ConvCandidate> candidates;  // every registered algorithm, registration order
  std::string chosen;                     // "" when nothing can run the key
  std::string reason;                     // why `chosen` (or why nothing)
};

// The ranking the current policy gives `key`, with each algorithm's verdict. Never throws for an
// unsupported key or an unknown forced name: the reasons say so.
ConvSelection explain_conv_algos(const ConvKey& key);

// Run one direction with the best algorithm for `key` that succeeds, trying the next on
// ConvNotSupported or OutOfMemory. Each returns the name of the algorithm that ran.
// requires: key.direction is the function's direction (ValueError otherwise).
// Throws ValueError when the forced name is unknown or does not support the key (naming the
// ones that do), and ConvNotSupported when no algorithm can run the key.
std::string run_conv_forward(const ConvKey& key, const void* x, const void* w, const void* bias,
                             void* y);
std::string run_conv_backward_data(const ConvKey& key, const void* dy, const void* w, void* dx);
std::string run_conv_backward_filter(const ConvKey& key, const void* dy, const void* x, void* dw);

// Empties the per-key ranking cache (and re-reads EMBER_CONV_ALGO on next use).
void clear_conv_algo_cache();

}  // namespace ember::ops

// The convolution algorithm registry: which algorithms exist, which of them can run a given
// convolution, and which one runs it (see docs/conv.md).
//
// A ConvKey describes one convolution completely (everything that can change the answer or the
// speed). Each ConvAlgo says whether it supports a key, how much workspace it needs and how to
// run it. A policy ranks the supporting algorithms for a key:
//   heuristic     (default) lowest estimated cost first;
//   deterministic only algorithms that give bit-identical results run to run
//                 (set_conv_deterministic(true));
//   forced        exactly the named algorithm (set_conv_algo("direct") or EMBER_CONV_ALGO).
// The ranking is cached per key. Running tries the ranked algorithms in turn, skipping one that
// throws ConvNotSupported or OutOfMemory. explain_conv_algos() shows the ranking and the reasons;
// EMBER_LOG=select prints each new choice to stderr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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
  int64_t n, c, h, w;  // input
  int64_t k, r, s;     // filters (count, height, width)
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
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
// The kernels' view of a key (output size computed from the key).
kernels::ConvShape conv_shape_of(const ConvKey& k);
// "forward f32 cpu N2 C3 H9 W9 K4 R3 S3 stride 1x1 pad 0x0 dil 1x1 groups 1".
std::string conv_key_string(const ConvKey& k);

// The buffers of one convolution (contiguous; see kernels/conv_shape.h for the layouts). Each
// direction reads and writes its own subset:
//   forward          x, w, bias (may be null) -> y
//   backward_data    dy, w                    -> dx
//   backward_filter  dy, x                    -> dw
struct ConvBuffers {
  const void* x = nullptr;
  const void* w = nullptr;
  const void* bias = nullptr;
  const void* dy = nullptr;
  void* y = nullptr;
  void* dx = nullptr;
  void* dw = nullptr;
};

// Thrown by an algorithm's run() when it finds it cannot handle a key after all: the registry
// tries the next algorithm.
class ConvNotSupported : public Error {
  using Error::Error;
};

struct ConvAlgo {
  std::string name;
  ConvBackend backend = ConvBackend::cpu;
  bool deterministic = true;
  // requires: non-null `why`. ensures: false with the reason in *why when unsupported.
  std::function<bool(const ConvKey&, std::string* why)> supports;
  std::function<size_t(const ConvKey&)> workspace_bytes;
  // Estimated run time in arbitrary units, for the heuristic policy (lower is better).
  std::function<double(const ConvKey&)> cost;
  std::function<void(const ConvKey&, const ConvBuffers&, void* workspace, size_t ws_bytes)> run;
};

// All registered algorithms, in registration order.
std::vector<std::string> conv_algo_names();
// Adds an algorithm. requires: its name is new (ValueError otherwise).
void register_conv_algo(ConvAlgo algo);
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

// Runs the convolution with the best algorithm for `key` that succeeds, trying the next on
// ConvNotSupported or OutOfMemory. Returns the name of the algorithm that ran.
// Throws ValueError when the forced name is unknown or does not support the key (naming the
// ones that do), and ConvNotSupported when no algorithm can run the key.
std::string run_conv(const ConvKey& key, const ConvBuffers& buffers);

// Empties the per-key ranking cache (and re-reads EMBER_CONV_ALGO on next use).
void clear_conv_algo_cache();

}  // namespace ember::ops

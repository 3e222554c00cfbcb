// Autocast: mixed precision as PyTorch's torch.autocast runs it. Inside a region opened for a kind
// of device (AutocastGuard; `cuda` covers the cuda and emu devices, `cpu` the cpu), the
// differentiable functions of the policy table (autocast.cpp) cast their floating arguments on
// that kind of device first:
//   lower_precision  to the region's dtype (float16 or bfloat16): conv2d, linear, matmul;
//   fp32             to float32: exp, log, pow, softplus, sum, softmax, log_softmax, the losses;
//   promote          to the widest floating dtype among them: cat, stack;
//   banned           a ValueError with PyTorch's message (binary_cross_entropy).
// Every other function runs in its inputs' dtypes (add, relu, pooling, batch_norm, which takes
// half activations with float32 parameters and statistics). float64 tensors, integer tensors and
// tensors on a kind of device with no open region are never cast. In-place methods (add_, ...) and
// the autograd-free ops of ops/ are never autocast; an op that casts runs its body with autocast
// off, so nothing inside it is cast again. The casts are recorded by autograd, so gradients reach
// float32 parameters as float32.
//
// The cast cache: the lower-precision copy of a float32 leaf that requires grad (a parameter) is
// made once and reused by every op of the region (and made again when the parameter is written);
// the cache is emptied when the outermost AutocastGuard of the thread closes.
//
// Unlike PyTorch, whose cpu list differs from its cuda list (softmax of bfloat16 stays bfloat16 on
// its cpu), Ember has one table for every device, so a model computes the same way on each.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/autocast_state.h"
#include "runtime/tensor.h"

namespace ember {

enum class CastPolicy { lower_precision, fp32, promote, banned };

// The policy of the differentiable function `op` under autocast; nullopt when it has none (it
// runs in its inputs' dtypes).
std::optional<CastPolicy> autocast_policy(std::string_view op);

// Opens (enabled) or closes (!enabled) autocast for a kind of device on this thread until it is
// destroyed; regions nest, each restoring the state it found.
// requires: dtype float16 or bfloat16 (DTypeError otherwise); device_type "cuda", "emu" (an alias
//           of "cuda") or "cpu" (ValueError naming the string otherwise).
class AutocastGuard {
 public:
  AutocastGuard(AutocastDevice device, std::optional<DType> dtype = std::nullopt,
                bool enabled = true, bool cache_enabled = true);
  AutocastGuard(const std::string& device_type, std::optional<DType> dtype = std::nullopt,
                bool enabled = true, bool cache_enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  AutocastDevice device_;
  AutocastState saved_;
};

bool is_autocast_enabled(AutocastDevice device);
AutocastDevice autocast_device_from_string(const std::string& device_type);

// Whether an op called now with these tensors must go through autocast_call: a region is open for
// the device kind of one of them and no autocast wrapper is running.
bool autocast_applies(std::initializer_list<const Tensor*> args);
bool autocast_applies(const std::vector<Tensor>& args);

// `args` cast by op's policy (undefined ones stay undefined); for `banned`, a ValueError.
std::vector<Tensor> autocast_cast_args(const char* op, std::vector<Tensor> args);

// While alive: ops are not autocast (the body of an autocast wrapper).
class AutocastExcludeGuard {
 public:
  AutocastExcludeGuard() { ++autocast_excluded(); }
  ~AutocastExcludeGuard() { --autocast_excluded(); }
  AutocastExcludeGuard(const AutocastExcludeGuard&) = delete;
  AutocastExcludeGuard& operator=(const AutocastExcludeGuard&) = delete;
};

// Runs body(casts) on op's arguments cast by its policy, with autocast off inside. The pattern of
// a listed function:
//   if (autocast_applies({&x, &w}))
//     return autocast_call("linear", {x, w}, [&](const auto& c) { return linear(c[0], c[1]); });
template <typename F>
auto autocast_call(const char* op, std::vector<Tensor> args, F&& body) {
  const std::vector<Tensor> casts = autocast_cast_args(op, std::move(args));
  AutocastExcludeGuard off;
  return body(casts);
}

// The number of cached casts on this thread (for tests and `EMBER_LOG`).
size_t autocast_cache_size();

}  // namespace ember

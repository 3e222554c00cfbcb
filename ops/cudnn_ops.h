// Ops that run on cuDNN where it serves, else on Ember's kernel (docs/gpu_backend.md,
// "Activations, softmax, pooling and batch norm on cuDNN"). Each run_* call takes Ember's kernel
// call as `ember` and runs exactly one of the two:
//   - Ember's: not a cuda device, cuDNN off or unusable, the op's preference prefer-ember
//     (ops/conv2d_cudnn.h), or a case cuDNN lacks (leaky_relu, gelu, softplus; dilated pooling;
//     sizes beyond its 32-bit descriptors; ...);
//   - cuDNN's under prefer-cudnn, and under benchmark when it was the faster of the two the
//     first time this op met this dtype and shape (BackendVerdicts).
// They return true when cuDNN ran. The operands are contiguous on `device`. EMBER_LOG=select
// says once per op which one runs and why, and each benchmark verdict with both times.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/activation_math.h"
#include "kernels/batch_norm_shape.h"
#include "kernels/pool_shape.h"
#include "kernels/softmax_shape.h"
#include "ops/conv2d_algo.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/tensor.h"

namespace ember::ops {

// Ember's kernel for the call. `timing`: a run of the benchmark preference's measurement, which
// must leave in-place state alone (batch norm's running stats).
using EmberRun = std::function<void(bool timing)>;

bool run_activation_forward(Device device, kernels::Activation a, kernels::ActivationParams p,
                            DType t, int64_t n, const void* x, void* y, const EmberRun& ember);
// s: what Ember's backward keeps (the output for sigmoid and tanh, the input for the others).
bool run_activation_backward(Device device, kernels::Activation a, kernels::ActivationParams p,
                             DType t, int64_t n, const void* s, const void* dy, void* dx,
                             const EmberRun& ember);
bool run_softmax_forward(Device device, bool log, DType t, const kernels::SoftmaxShape& s,
                         const void* x, void* y, const EmberRun& ember);
bool run_softmax_backward(Device device, bool log, DType t, const kernels::SoftmaxShape& s,
                          const void* y, const void* dy, void* dx, const EmberRun& ember);

// Pooling with s's window (adaptive average pooling as the average pooling it equals when the
// output divides the input). max: no indices (cuDNN's backward finds the maxima again from x and
// y); avg: s.count_include_pad as given.
enum class PoolMode : uint8_t { max, avg };
bool run_pool_forward(Device device, PoolMode m, DType t, const kernels::PoolShape& s,
                      const void* x, void* y, const EmberRun& ember);
// x and y: the forward's input and output (max only; null for avg).
bool run_pool_backward(Device device, PoolMode m, DType t, const kernels::PoolShape& s,
                       const void* x, const void* y, const void* dy, void* dx,
                       const EmberRun& ember);

// Batch norm's operands: x, y, dy, dx hold n*c*s elements, the others c (weight and bias may be
// undefined: 1 and 0).
struct BatchNormArgs {
  DType t = DType::f32;
  kernels::BatchNormShape s;
  double eps = 1e-5, momentum = 0.1;
  Tensor weight, bias;
};
// Training: y, save_mean, save_invstd and the running stats (may be null), and *reserve: cuDNN's
// reserve space for the backward (undefined when it needs none or Ember's kernel ran).
bool run_batch_norm_training(Device device, const BatchNormArgs& a, const void* x,
                             void* running_mean, void* running_var, void* y, void* save_mean,
                             void* save_invstd, Tensor* reserve, const EmberRun& ember);
// Eval: y from the running stats, save_mean (= running_mean) and save_invstd.
bool run_batch_norm_inference(Device device, const BatchNormArgs& a, const void* x,
                              const Tensor& running_mean, const Tensor& running_var, void* y,
                              void* save_mean, void* save_invstd, const EmberRun& ember);
// The training backward; dx, dw, db may be null (not wanted). `reserve`: the forward's. cuDNN
// runs it only with the reserve space its forward left, where it needs one.
bool run_batch_norm_backward(Device device, const BatchNormArgs& a, const void* x, const void* dy,
                             const void* save_mean, const void* save_invstd, const Tensor& reserve,
                             void* dx, void* dw, void* db, const EmberRun& ember);

// y = conv(x, w) + bias, or relu of it, as one cuDNN graph (Note [Fused convolution graphs] in
// ops/cudnn/graph.cpp; one rounding, Note [Half bias in one rounding] in ops/conv2d_cudnn.cpp),
// for a forward key on cuda under the convolution's preference. false when cuDNN should not
// (an algorithm is forced) or cannot (no config of the fused graph makes a plan): the caller then
// runs the convolution through the registry.
bool cudnn_conv2d_fused(const ConvKey& key, const void* x, const void* w, const void* bias, void* y,
                        bool relu);

// --- The benchmark preference's verdicts ------------------------------------------------------

struct BackendVerdict {
  bool cudnn = false;    // cuDNN runs this key
  double cudnn_ms = -1;  // the medians measured; -1: not measured (cuDNN lacks the case)
  double ember_ms = -1;
  std::string reason;  // "cuDNN 0.021 ms, Ember's kernel 0.034 ms"
};

// One verdict per key ("pooling max f32 8x64x56x56 k3 s2 p1 cuda:0"), measured on first sight and
// kept for the process. Thread-safe; the measurement runs under the lock.
class BackendVerdicts {
 public:
  // The verdict for `key`: time_cudnn() and time_ember() measure (milliseconds; time_cudnn
  // returns a negative value where cuDNN lacks the case). cuDNN wins ties. *fresh: whether it
  // was measured now.
  BackendVerdict choose(const std::string& key, const std::function<double()>& time_cudnn,
                        const std::function<double()>& time_ember, bool* fresh = nullptr);
  // Every verdict so far, by key.
  std::vector<std::pair<std::string, BackendVerdict>> entries();
  size_t size();
  void clear();

 private:
  std::mutex mu_;
  std::unordered_map<std::string, BackendVerdict> verdicts_;
};
BackendVerdicts& backend_verdicts();

}  // namespace ember::ops

// What cuDNN would choose for a convolution on a GPU described in JSON, with no GPU and no handle
// (docs/gpu_backend.md, "cuDNN's engines"), as plain data for `ember algos --cudnn-device` and the
// tests. The `cudnn` family that runs those choices is registered with the other algorithms
// (cudnn_conv_family() in ops/conv2d_algo.h; ops/conv2d_cudnn.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/conv2d_algo.h"

namespace ember::ops {

// --- Settings (Python: ember.backends.cudnn.enabled, .allow_tf32; docs/gpu_backend.md) -------

// cuDNN on or off for convolutions. Unless set here, EMBER_CUDNN decides: 0 off, 1 or unset on
// (another value: ValueError naming it). Off, the `cudnn` family says so and Ember's kernels run.
// Setting it clears the convolution caches (their rankings included cuDNN or did not).
void set_cudnn_enabled(bool on);
bool cudnn_enabled();
// Why cuDNN cannot serve cuda device work in this process ("" when it can): no GPU, or the
// version verdict of runtime/cudnn_versions.h (said once on stderr), or a build without cuDNN.
const std::string& cudnn_unusable_reason();
// Forgets set_cudnn_enabled, so that EMBER_CUDNN decides again.
void reset_cudnn_enabled();

// Lets float32 convolutions on cuda use TF32: their keys get ConvMathMode::tf32, and cuDNN's
// tensor-core engines become candidates. Off by default: float32 stays strict FMA math (PyTorch
// allows TF32 in convolutions by default; Ember asks for it to be said).
void set_conv_allow_tf32(bool on);
bool conv_allow_tf32();

// Who runs an op on cuda, per op: cuDNN (prefer_cudnn, the default where cuDNN is usable), Ember's
// kernels (prefer_ember), or whichever was faster when both were timed on the op's first call
// with that dtype and shape (benchmark; the verdicts are kept for the process, and EMBER_LOG=select
// prints each with both times). Convolution: whose algorithms the heuristic policy tries first,
// each in its own order; benchmark there turns on the convolution's benchmark policy for cuda keys
// (set_conv_benchmark), which times cuDNN's engines and Ember's kernels together. Activations
// (relu, sigmoid, tanh, elu, silu, relu6), softmax / log_softmax, pooling (max, average, adaptive
// average) and batch norm: whether cuDNN's kernel runs them (ops/cudnn_ops.h); cases cuDNN lacks
// always run Ember's.
enum class BackendPreference : uint8_t { prefer_cudnn, prefer_ember, benchmark };
enum class CudnnOp : uint8_t { conv2d, activation, softmax, pooling, batch_norm };
constexpr int kCudnnOps = 5;
void set_backend_preference(CudnnOp op, BackendPreference p);
BackendPreference backend_preference(CudnnOp op);
// "conv2d", "activation", "softmax", "pooling" or "batch_norm"; ValueError naming them otherwise.
CudnnOp parse_cudnn_op(const std::string& name);
const char* cudnn_op_name(CudnnOp op);
// The convolution's: set_backend_preference(CudnnOp::conv2d, p).
void set_conv_backend_preference(BackendPreference p);
BackendPreference conv_backend_preference();
// "prefer-cudnn", "prefer-ember" or "benchmark"; ValueError for another name.
BackendPreference parse_backend_preference(const std::string& name);
const char* backend_preference_name(BackendPreference p);

// Batch norm in training on cuDNN's CUDNN_BATCHNORM_SPATIAL_PERSISTENT mode instead of SPATIAL:
// often faster, but cuDNN warns that it can overflow on some inputs, so it is opt-in (default
// off; Python ember.backends.cudnn.batch_norm_persistent).
void set_cudnn_batch_norm_persistent(bool on);
bool cudnn_batch_norm_persistent();

// One engine config in the order the heuristic policy tries them.
struct CudnnEngineRow {
  std::string name;        // "cudnn:eng70{2=2,18=0}"
  std::string list;        // "A" (cuDNN's heuristics, mode A) or "fallback"
  std::string notes;       // numerical and behaviour notes, "" when none
  std::string refusal;     // why the policy drops it for this key; "" when it is tried
  int64_t workspace = -1;  // bytes, from the plan made for the described GPU; -1 without a plan
  std::string plan_error;  // why cuDNN made no plan (tried configs only)
};

struct CudnnRanking {
  std::string device_name;    // "NVIDIA H200"
  std::string device_source;  // where the description's numbers come from ("" when captured)
  int64_t global_count = 0;   // engines cuDNN has for this operation graph
  std::vector<CudnnEngineRow> rows;
};

// cuDNN's ranked engine configs for `key` (its direction) on the GPU that `device_file`
// describes (the JSON of data/cudnn/h200.json). Throws IOError / FormatError for a bad file,
// CudnnError with cuDNN's reason, ConvNotSupported for a key cuDNN cannot describe, and Error in
// a build without cuDNN.
CudnnRanking cudnn_ranking(const ConvKey& key, const std::string& device_file);

}  // namespace ember::ops

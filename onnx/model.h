// ember::onnx — load an ONNX model and run it for inference on cpu, cuda or emu.
//
//   auto model = ember::onnx::load("resnet.onnx", {ember::Device::parse("cuda")});
//   std::vector<ember::Tensor> y = model.run({x});
//
// Loading reads the file (protobuf, through Debian's ONNX package), checks it (every
// unsupported operator, opset or attribute is listed at once, before anything runs), places the
// weights on the device and optimises the graph (onnx/passes.h). Running frees each
// intermediate tensor after its last use, so tensors whose lifetimes do not overlap share
// memory through the device's caching allocator; the peak is measured per run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnx/graph.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

namespace ember::onnx {

struct LoadOptions {
  Device device = kCPU;
  bool optimize = true;  // constant folding, batch-norm folding, conv+add+relu fusion, packing
};

// What the graph passes did at load time.
struct PassReport {
  int folded_constants = 0;   // nodes computed once at load
  int folded_batch_norms = 0; // BatchNormalization nodes folded into the Conv before them
  int fused_relus = 0;        // Relu nodes applied by the Conv before them
  int fused_clips = 0;        // Clip nodes (constant scalar bounds) applied by the Conv before them
  int fused_adds = 0;         // Add nodes (a residual sum) applied by the Conv before them
  int removed_nodes = 0;      // nodes no output depends on
};

struct NodeTiming {
  std::string node, op_type;
  double ms = 0;  // the device synchronised after the node
  // The kernels and library calls the node made ("conv2d_fwd_implicit_gemm_cpu", "cudnn ..."),
  // which name the convolution algorithms chosen; from the op trace (runtime/trace.h).
  std::vector<std::string> calls;
};

struct RunStats {
  double ms = 0;
  size_t peak_bytes = 0;    // the device allocator's high-water mark during the run
  size_t weight_bytes = 0;  // the constants the model holds on the device
  std::vector<NodeTiming> nodes;  // when profiling
};

class Model {
 public:
  // Inputs in the order of inputs() (or by name). Tensors on another device are copied to the
  // model's. Throws ValueError/DTypeError/ShapeError for a wrong count, name, dtype or fixed dim.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  Device device() const;
  int64_t opset() const;
  int64_t num_nodes() const;  // after the passes
  const PassReport& passes() const;
  // With profiling on, each run times every node (synchronising after each one) and records
  // its kernel calls through the op trace (replacing any trace that is active).
  void set_profiling(bool on);
  // The last run's statistics (of this thread's last call).
  RunStats last_run() const;

  struct Impl;
  explicit Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

// requires: a readable ONNX model file. Throws IOError (file), FormatError (malformed, with
// the node or initializer named), ValueError (what Ember does not support, all of it listed).
Model load(const std::string& path, const LoadOptions& options = {});
// The same from bytes in memory; such a model cannot have external data.
Model load_from_memory(const void* data, size_t size, const LoadOptions& options = {});

}  // namespace ember::onnx

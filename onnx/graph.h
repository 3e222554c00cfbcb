// The ONNX importer's own graph: what a model file says, read into plain C++ (no protobuf types
// past onnx/proto.cpp), then checked, optimised (onnx/passes.cpp) and run (onnx/model.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace ember::ops {
struct PackedConv2dFilters;  // ops/conv2d.h
struct PreparedConv2d;
}

namespace ember::onnx {

// One node attribute. Only the kinds Ember's operators read; a graph-valued attribute (If, Loop)
// is kept as Kind::unsupported so the loader can name it.
struct Attr {
  enum class Kind { i, f, s, ints, floats, strings, tensor, unsupported };
  Kind kind = Kind::unsupported;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  Tensor t;  // on the cpu
};

struct Node {
  std::string name;  // the file's name, or "<op_type> #<index>" when the file gives none
  std::string op_type;
  std::string domain;  // "" is the default ONNX domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attr, std::less<>> attrs;  // looked up by C strings without a copy
  bool fused_relu = false;  // a Conv whose Relu the fusion pass folded in (onnx/passes.cpp)
  // A Conv whose Clip the fusion pass folded in: its bounds (lo, hi), e.g. ReLU6's (0, 6).
  std::optional<std::pair<double, double>> fused_clip;
  // A Conv whose following Add the fusion pass folded in: inputs[3] is the other addend, added
  // before the fused activation (a residual block's shortcut).
  bool fused_add = false;
  // A Conv's constant filters packed at load for the cpu's implicit GEMM (onnx/passes.cpp).
  std::shared_ptr<const ops::PackedConv2dFilters> packed_filters;
  // Such a Conv's forward prepared for the input shape its last run met (Note [Prepared
  // convolutions] in ops/conv2d.cpp), shared by the threads that run the model.
  struct PreparedConv {
    std::mutex mu;
    std::shared_ptr<const ops::PreparedConv2d> prepared;
  };
  std::shared_ptr<PreparedConv> prepared_conv;
};

// A graph input or output as declared: element type and shape, -1 for a symbolic dim.
struct ValueInfo {
  std::string name;
  std::optional<DType> dtype;  // nullopt when the file does not say
  std::vector<int64_t> shape;
  bool has_shape = false;
  std::string kind = "tensor";  // "sequence", "map", "optional", ...: not runnable by Ember
};

struct Graph {
  int64_t opset = 0;  // of the default domain
  std::string producer;
  std::vector<Node> nodes;
  std::map<std::string, Tensor> initializers;  // on the cpu until the model is placed
  std::vector<ValueInfo> inputs;   // without the ones an initializer provides
  std::vector<ValueInfo> outputs;
};

// The oldest and newest opset of the default domain Ember reads (the newest is what Debian's
// ONNX package defines). Each operator also names the opset its semantics date from
// (OpDef::since): an older model using it is refused with that reason.
constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 17;

// Reads a serialized ModelProto. External data files are read from `model_dir` only (none when
// it is empty). Throws FormatError naming the node or initializer at fault, IOError for files.
Graph read_model(const void* data, size_t size, const std::string& model_dir,
                 const std::string& source);

// Reads a serialized TensorProto (the test suite's input_0.pb files) into a cpu tensor.
Tensor read_tensor(const void* data, size_t size, const std::string& source);

// The bytes of a file (IOError naming it when it cannot be read).
std::string read_file(const std::string& path);

// ONNX's TensorProto element type for an Ember dtype, and its name ("FLOAT", "INT64", ...).
int onnx_elem_type(DType dtype);
std::string onnx_type_name(int elem_type);

}  // namespace ember::onnx

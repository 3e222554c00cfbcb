// ONNX operators as Ember runs them: one OpDef per operator (its name, the opset its semantics
// date from, the attributes it reads, and how it runs on Ember's ops), grouped by family in
// onnx/ops_*.cpp. The loader asks `unsupported` about every node before anything runs.
#pragma once

#include <string>
#include <vector>

#include "onnx/graph.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

namespace ember::onnx {

// What an operator sees of its node when it runs: the inputs (an undefined Tensor for an omitted
// optional one) and typed access to the attributes.
struct OpArgs {
  const Node& node;
  int64_t opset;
  Device device;
  std::vector<Tensor> in;

  bool has_input(size_t k) const { return k < in.size() && in[k].defined(); }
  // Whether the op may write its result into input k: this node is the value's last reader (the
  // graph let go of it), nothing else shares its storage, it is contiguous and has no autograd
  // history. Graph inputs, outputs and constants are never owned.
  bool owned(size_t k) const;
  // requires: has_input(k) (FormatError naming the node otherwise).
  const Tensor& input(size_t k) const;
  // An integer input (shapes, axes, pads...) read to the host.
  std::vector<int64_t> ints_input(size_t k) const;
  // A scalar input read to the host as double.
  double scalar_input(size_t k) const;

  bool has(const char* attr) const { return node.attrs.count(attr) != 0; }
  int64_t i(const char* attr, int64_t fallback) const;
  double f(const char* attr, double fallback) const;
  std::string s(const char* attr, const std::string& fallback) const;
  std::vector<int64_t> ints(const char* attr, std::vector<int64_t> fallback = {}) const;
  // The node's list of ints `attr` where it has one, null where it has none: no copy, for the
  // ops that read attributes on every run (Conv).
  const std::vector<int64_t>* ints_if(const char* attr) const;
  std::vector<double> floats(const char* attr) const;
  const Tensor& tensor(const char* attr) const;
  // A FormatError naming the node: "<op> node '<name>': <message>".
  [[noreturn]] void fail(const std::string& message) const;
};

using OpRun = std::vector<Tensor> (*)(const OpArgs&);
// Why a node cannot run for a reason its attributes give ("" when it can), checked at load.
using OpCheck = std::string (*)(const Node&);

struct OpDef {
  const char* name;
  int64_t since;                   // the opset this operator's semantics (as run here) date from
  std::vector<const char*> attrs;  // the attributes it reads; any other one is refused at load
  OpRun run;
  OpCheck check = nullptr;
};

// The operator named `op_type` in the default domain, or nullptr.
const OpDef* find_op(const std::string& op_type);
// Every supported operator, by name.
std::vector<const OpDef*> all_ops();
// Every reason `node` cannot run under `opset` (empty when it can).
std::vector<std::string> unsupported(const Node& node, int64_t opset);

// The families (onnx/ops_*.cpp) append their definitions.
void add_elementwise_ops(std::vector<OpDef>& ops);
void add_nn_ops(std::vector<OpDef>& ops);
void add_shape_ops(std::vector<OpDef>& ops);
void add_resize_ops(std::vector<OpDef>& ops);

// Axis `a` of a rank-`rank` tensor, negative counting from the end (FormatError when outside).
int64_t normalize_axis(const OpArgs& args, int64_t a, int64_t rank);

}  // namespace ember::onnx

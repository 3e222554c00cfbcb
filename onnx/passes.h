// The graph passes run at load time, in this order: check and sort (FormatError for cycles,
// dangling inputs, outputs defined twice), list what is unsupported (all of it, ValueError),
// then optimise: constant folding, batch-norm folding into convolutions, conv+add fusion
// (a residual sum), conv+relu fusion, dead-node removal, and on the cpu the convolutions'
// constant filters packed for the implicit GEMM.
#pragma once

#include <map>
#include <string>

#include "onnx/graph.h"
#include "onnx/model.h"

namespace ember::onnx {

struct OpDef;  // onnx/op_registry.h

// Sorts g.nodes topologically. requires nothing; throws FormatError naming the node or value.
void sort_and_check(Graph& g, const std::string& source);

// Throws ValueError listing every (operator, opset, attribute) of g Ember cannot run.
void check_supported(const Graph& g, const std::string& source);

// Runs one node on `device` (errors re-thrown with the node named): as `def`, its operator, when
// given (a model's run looks each node's up once, at load), else as the table's.
std::vector<Tensor> run_node(const Node& node, int64_t opset, Device device,
                             std::vector<Tensor> inputs, const OpDef* def = nullptr);

// Optimises a sorted, supported graph whose initializers are on `device`: folded values join
// g.initializers, rewritten and removed nodes leave g.nodes.
PassReport optimize(Graph& g, Device device);

}  // namespace ember::onnx

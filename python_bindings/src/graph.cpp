// The autograd graph seen from Python, as PyTorch shows it: tensor.grad_fn is a node object with
// name(), next_functions ((node or None, input index) per input) and, for a leaf's
// AccumulateGrad, .variable.
//
// Note [PyTorch's node names]: Ember's nodes are named "<Op>Backward"; PyTorch appends the
// overload of the op it differentiates ("MulBackward0", "SumBackward1" for a sum over dims) and
// names some differently ("ConvolutionBackward0"). name() answers with PyTorch's name of the node
// that computes the tensor, which is what repr(tensor) shows. Where PyTorch builds an op from
// several nodes and Ember from one (cross_entropy is LogSoftmax then NllLoss there, linear is a
// transpose then addmm), the name is PyTorch's of the last node, and next_functions follows
// Ember's graph.
#include <cstdio>
#include <unordered_set>

#include "autograd/node.h"
#include "common.h"

namespace ember::py {
namespace {

// Names of nodes recorded by ember.autograd.Function subclasses: PyTorch gives those the class's
// name + "Backward", with no overload number. Filled under the GIL.
std::unordered_set<std::string>& python_function_names() {
  static auto* names = new std::unordered_set<std::string>();
  return *names;
}

size_t output_dim(const Node& n) {
  return n.output_meta.empty() ? 0 : n.output_meta[0].shape.size();
}

}  // namespace

void note_python_function(const std::string& name) {
  python_function_names().insert(name);
}

std::string torch_node_name(const Node& n) {
  std::string name = n.name();
  const std::string suffix = "Backward";
  if (name.size() <= suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0 ||
      python_function_names().count(name) != 0)
    return name;  // AccumulateGrad, and custom Python functions
  const std::string op = name.substr(0, name.size() - suffix.size());
  // A reduction to one element is the overload without dims (0), with dims it is 1.
  if (op == "Sum" || op == "Mean") return op + (output_dim(n) == 0 ? "Backward0" : "Backward1");
  if (op == "Pow") return n.next_edges.size() == 1 ? "PowBackward0" : "PowBackward1";
  if (op == "Squeeze") return "SqueezeBackward0";
  if (op == "Conv2d") return "ConvolutionBackward0";
  if (op == "BatchNorm") return "NativeBatchNormBackward0";
  if (op == "MaxPool2d") return "MaxPool2DWithIndicesBackward0";
  if (op == "AvgPool2d") return "AvgPool2DBackward0";
  if (op == "AdaptiveAvgPool2d") return "AdaptiveAvgPool2DBackward0";
  if (op == "CrossEntropy") return "NllLossBackward0";
  if (op == "Clamp") return "ClampBackward1";
  if (op == "Dropout") return "MulBackward0";
  if (op == "Reshape" || op == "Flatten") return "ViewBackward0";
  if (op == "Linear") return n.next_edges.size() == 3 ? "AddmmBackward0" : "MmBackward0";
  if (op == "Matmul") {
    const size_t d = output_dim(n);
    return d == 0   ? "DotBackward0"
           : d == 1 ? "MvBackward0"
           : d == 2 ? "MmBackward0"
                    : "BmmBackward0";
  }
  return name + "0";
}

void init_graph(pb::module_& m) {
  pb::class_<Node, std::shared_ptr<Node>>(m, "Node")
      .def("name", &torch_node_name, "The node's name as PyTorch gives it (\"MulBackward0\").")
      .def_property_readonly("_ember_name", &Node::name)
      .def_property_readonly(
          "next_functions",
          [](const Node& n) {
            pb::tuple t(n.next_edges.size());
            for (size_t i = 0; i < n.next_edges.size(); ++i) {
              const Edge& e = n.next_edges[i];
              t[i] = pb::make_tuple(e.valid() ? pb::cast(e.fn) : pb::none(), e.input_nr);
            }
            return t;
          },
          "One (node, input index) pair per input of the op: the node its gradient flows to, or "
          "None for an input that needs none.")
      .def_property_readonly(
          "variable",
          [](const Node& n) -> Tensor {
            auto* acc = dynamic_cast<const AccumulateGrad*>(&n);
            if (acc == nullptr)
              throw pb::attribute_error("'" + torch_node_name(n) +
                                        "' object has no attribute 'variable'");
            return acc->variable();
          },
          "The leaf tensor an AccumulateGrad node accumulates into.")
      .def("__repr__", [](const Node& n) {
        char addr[32];
        std::snprintf(addr, sizeof addr, "%p", static_cast<const void*>(&n));
        return "<" + torch_node_name(n) + " object at " + addr + ">";
      });
}

}  // namespace ember::py

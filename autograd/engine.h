// Backward passes: the dependency-counted walk over the graph, and the public entry points.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember {

// Computes d(root)/d(leaf) for every leaf that requires grad and accumulates it into the leaf's
// grad. requires: root requires grad; `gradient` is given unless root has one element (it then
// defaults to 1), and has root's shape, dtype and device. retain_graph=false frees the graph's
// saved tensors, so a second backward through it raises an Error.
void backward(const Tensor& root, const Tensor& gradient = Tensor(), bool retain_graph = false);

// Gradients of `outputs` w.r.t. `inputs` (returned, not accumulated into .grad), like
// torch.autograd.grad. An input the outputs do not depend on gets an undefined tensor when
// allow_unused, else an Error.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool allow_unused = false);

}  // namespace ember

// Backward passes: the dependency-counted walk over the graph, and the public entry points.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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

// Note [Post-accumulate-grad hooks]: a hook registered on a leaf runs each time a backward pass
// has accumulated a gradient into the leaf's grad (PyTorch's
// Tensor.register_post_accumulate_grad_hook), with the leaf as argument, while the rest of the
// backward pass is still to run. It is how a consumer acts on a gradient as soon as it is final
// for this pass (dist/ddp.h launches the all-reduce of a bucket of gradients from it, so that
// communication overlaps the rest of the backward). Hooks run in registration order, under
// NoGradGuard; torch.autograd.grad-style calls (grad() below) accumulate nothing and run none.
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;

// Removes its hook on remove(); does nothing once the leaf is gone or the hook removed.
class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(std::weak_ptr<TensorImpl> leaf, uint64_t id) : leaf_(std::move(leaf)), id_(id) {}
  void remove();

 private:
  std::weak_ptr<TensorImpl> leaf_;
  uint64_t id_ = 0;
};

// requires: `leaf` is a leaf that requires grad (ValueError otherwise).
// ensures: `hook(leaf)` runs after every accumulation into leaf's grad until removed.
HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);

}  // namespace ember

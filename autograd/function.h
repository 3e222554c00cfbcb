// Building blocks for differentiable functions: recording a node for an op's output.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/functions.h"
#include "autograd/node.h"

namespace ember {

// Sums a broadcast gradient back to `shape` (over added leading dims and expanded size-1 dims).
Tensor sum_to(const Tensor& grad, const Shape& shape);

// A single-output node whose backward is a function of the output gradient and saved tensors.
class FunctionNode final : public Node {
 public:
  using Backward =
      std::function<std::vector<Tensor>(const Tensor& grad_out, const std::vector<Tensor>& saved)>;
  FunctionNode(std::string name, Backward backward, std::vector<Tensor> saved);
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::string name() const override { return name_; }
  void release_saved() override;

 private:
  std::string name_;
  Backward backward_;
  std::vector<SavedTensor> saved_;
};

// True when grad mode is on and some input requires grad.
bool any_requires_grad(const std::vector<Tensor>& inputs);

// If recording is needed, attaches a FunctionNode named `name` to `out` with edges to `inputs`;
// `saved` tensors are stored detached (so an op may save its own output without a cycle), with
// their versions checked when backward runs. Returns `out`.
Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs,
              std::vector<Tensor> saved, FunctionNode::Backward backward);

// Runs `view_fn` on x and records it as node `name`.
// requires: view_fn depends only on its argument's shape and, given a contiguous tensor, returns
//           a view of it (on x itself it may copy, as reshape does).
// ensures:  the gradient is zeros of x's shape with view_fn's view of them set to the output
//           gradient, so one backward serves every indexing and view function.
Tensor record_view(const char* name, const Tensor& x,
                   const std::function<Tensor(const Tensor&)>& view_fn);

}  // namespace ember

#include "autograd/function.h"

#include "autograd/grad_mode.h"
#include "ops/reduce.h"

namespace ember {

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  EMBER_CHECK_SHAPE(lead >= 0, "sum_to: cannot reduce shape ", grad.shape(), " to ", shape);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && grad.shape()[d] != 1)) dims.push_back(d);
  Tensor r = dims.empty() ? grad : ops::sum(grad, dims, /*keepdim=*/true);
  return r.reshape(shape);
}

FunctionNode::FunctionNode(std::string name, Backward backward, std::vector<Tensor> saved)
    : name_(std::move(name)), backward_(std::move(backward)) {
  for (const Tensor& t : saved) saved_.emplace_back(t);
}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor>&& grad_outputs) {
  std::vector<Tensor> saved;
  saved.reserve(saved_.size());
  for (const SavedTensor& s : saved_) saved.push_back(s.unpack(*this));
  if (grad_outputs.empty() || !grad_outputs[0].defined()) return {};
  return backward_(grad_outputs[0], saved);
}

void FunctionNode::release_saved() {
  for (SavedTensor& s : saved_) s.reset();
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs,
              std::vector<Tensor> saved, FunctionNode::Backward backward) {
  if (!any_requires_grad(inputs)) return out;
  // Never overwrite an input's history: an output that is an input becomes a new view of it.
  for (const Tensor& in : inputs)
    if (out.is_same(in)) out = out.as_strided(out.shape(), out.strides(), out.offset());
  for (Tensor& s : saved) s = detach(s);
  auto node = std::make_shared<FunctionNode>(name, std::move(backward), std::move(saved));
  for (const Tensor& in : inputs) node->next_edges.push_back(gradient_edge(in));
  node->output_meta.push_back({out.shape(), out.dtype(), out.device()});
  AutogradMeta& m = autograd_meta(out);
  m.grad_fn = std::move(node);
  m.output_nr = 0;
  return out;
}

Tensor record_view(const char* name, const Tensor& x,
                   const std::function<Tensor(const Tensor&)>& view_fn) {
  Tensor out = view_fn(x);
  if (!any_requires_grad({x})) return out;
  Shape shape = x.shape();
  TensorOptions opts(x.dtype(), x.device());
  return record(name, out, {x}, {},
                [view_fn, shape, opts](const Tensor& g, const std::vector<Tensor>&) {
                  Tensor z = zeros(shape, opts);
                  view_fn(z).copy_(g);
                  return std::vector<Tensor>{z};
                });
}

}  // namespace ember

#include "autograd/engine.h"

#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/grad_mode.h"
#include "autograd/leaf.h"
#include "autograd/node.h"
#include "ops/elementwise.h"

namespace ember {
namespace {

// Checks a gradient against what the edge expects; names the node so the message is actionable.
void check_grad(const Tensor& g, const GradMeta& m, const Node& node, size_t index) {
  EMBER_CHECK_SHAPE(g.shape() == m.shape, "autograd: ", node.name(), " got a gradient of shape ",
                    g.shape(), " for output ", index, ", expected ", m.shape);
  EMBER_CHECK_DTYPE(g.dtype() == m.dtype, "autograd: ", node.name(), " got a gradient of dtype ",
                    g.dtype(), " for output ", index, ", expected ", m.dtype);
  EMBER_CHECK_DEVICE(g.device() == m.device, "autograd: ", node.name(),
                     " got a gradient on device ", g.device(), " for output ", index,
                     ", expected ", m.device);
}

struct NodeOrder {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

// Captures gradients flowing into chosen nodes' inputs (for grad()) instead of accumulating.
struct Capture {
  Node* node;
  uint32_t input_nr;
  size_t slot;
};

void run_backward(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads,
                  bool retain_graph, const std::vector<Capture>& captures,
                  std::vector<Tensor>* captured, bool accumulate) {
  // 1. Count dependencies: how many edges point at each node (reachable from the roots).
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const Edge& e : roots)
    if (e.valid() && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      deps[e.fn.get()]++;
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_to_buffer = [&](Node* n, uint32_t input_nr, const Tensor& g) {
    auto& buf = buffers[n];
    if (buf.size() < n->output_meta.size()) buf.resize(n->output_meta.size());
    Tensor& slot = buf.at(input_nr);
    slot = slot.defined() ? ops::add(slot, g) : g;
  };
  std::priority_queue<Node*, std::vector<Node*>, NodeOrder> ready;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].valid()) continue;
    add_to_buffer(roots[i].fn.get(), roots[i].input_nr, root_grads[i]);
  }
  for (Node* n : seen)
    if (deps[n] == 0) ready.push(n);

  // Nodes held alive for the duration of the pass (edges may be the only owners).
  std::vector<std::shared_ptr<Node>> keep;
  for (const Edge& e : roots) keep.push_back(e.fn);

  NoGradGuard no_grad;  // backward itself is not recorded
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(n->output_meta.size());
    for (size_t i = 0; i < grads.size(); ++i)
      if (grads[i].defined()) check_grad(grads[i], n->output_meta[i], *n, i);
    for (const Capture& c : captures)
      if (c.node == n && grads[c.input_nr].defined()) {
        Tensor& dst = (*captured)[c.slot];
        dst = dst.defined() ? ops::add(dst, grads[c.input_nr]) : grads[c.input_nr];
      }
    bool is_accumulator = dynamic_cast<AccumulateGrad*>(n) != nullptr;
    std::vector<Tensor> input_grads;
    if (!is_accumulator || accumulate) input_grads = n->apply(std::move(grads));
    if (!retain_graph) n->release_saved();
    for (size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.valid()) continue;
      keep.push_back(e.fn);
      if (i < input_grads.size() && input_grads[i].defined())
        add_to_buffer(e.fn.get(), e.input_nr, input_grads[i]);
      if (--deps[e.fn.get()] == 0) ready.push(e.fn.get());
    }
  }
}

Tensor default_root_grad(const Tensor& root, const Tensor& gradient) {
  if (gradient.defined()) {
    EMBER_CHECK_SHAPE(gradient.shape() == root.shape(), "backward: gradient of shape ",
                      gradient.shape(), " does not match the output's shape ", root.shape());
    EMBER_CHECK_DTYPE(gradient.dtype() == root.dtype(), "backward: gradient of dtype ",
                      gradient.dtype(), " does not match the output's dtype ", root.dtype());
    EMBER_CHECK_DEVICE(gradient.device() == root.device(), "backward: gradient on ",
                       gradient.device(), " but the output is on ", root.device());
    return gradient;
  }
  EMBER_CHECK_VALUE(root.numel() == 1,
                    "backward: a gradient can be implied only for a one-element output; this "
                    "output has shape ", root.shape(), ", so pass a gradient of that shape");
  return ones(root.shape(), {root.dtype(), root.device()});
}

}  // namespace

void backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  EMBER_CHECK_VALUE(root.requires_grad(),
                    "backward: the tensor does not require grad and has no grad_fn (was it "
                    "computed under NoGradGuard, or from inputs without requires_grad?)");
  Edge e = gradient_edge(root);
  run_backward({e}, {default_root_grad(root, gradient)}, retain_graph, {}, nullptr, true);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool allow_unused) {
  EMBER_CHECK_VALUE(grad_outputs.empty() || grad_outputs.size() == outputs.size(),
                    "grad: got ", grad_outputs.size(), " grad_outputs for ", outputs.size(),
                    " outputs");
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    EMBER_CHECK_VALUE(outputs[i].requires_grad(), "grad: output ", i, " does not require grad");
    roots.push_back(gradient_edge(outputs[i]));
    root_grads.push_back(default_root_grad(outputs[i], grad_outputs.empty() ? Tensor() : grad_outputs[i]));
  }
  std::vector<Capture> captures;
  std::vector<std::shared_ptr<Node>> keep;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK_VALUE(inputs[i].requires_grad(), "grad: input ", i, " does not require grad");
    Edge e = gradient_edge(inputs[i]);
    keep.push_back(e.fn);
    captures.push_back({e.fn.get(), e.input_nr, i});
  }
  std::vector<Tensor> result(inputs.size());
  run_backward(roots, root_grads, retain_graph, captures, &result, false);
  for (size_t i = 0; i < inputs.size(); ++i)
    EMBER_CHECK_VALUE(allow_unused || result[i].defined(), "grad: input ", i,
                      " was not used to compute the outputs (pass allow_unused=true to get an "
                      "undefined gradient instead)");
  return result;
}

HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  EMBER_CHECK_VALUE(leaf.defined() && is_leaf(leaf) && leaf.requires_grad(),
                    "register_post_accumulate_grad_hook: the tensor must be a leaf that requires "
                    "grad (a parameter); a computed tensor's gradient is never accumulated");
  EMBER_CHECK_VALUE(static_cast<bool>(hook), "register_post_accumulate_grad_hook: empty hook");
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id.fetch_add(1, std::memory_order_relaxed);
  autograd_meta(leaf).post_accumulate_grad_hooks.emplace_back(id, std::move(hook));
  return HookHandle(leaf.impl_ptr(), id);
}

void HookHandle::remove() {
  std::shared_ptr<TensorImpl> impl = leaf_.lock();
  if (!impl) return;
  if (AutogradMeta* m = autograd_meta_if(Tensor(impl))) {
    auto& hooks = m->post_accumulate_grad_hooks;
    for (auto it = hooks.begin(); it != hooks.end(); ++it)
      if (it->first == id_) {
        hooks.erase(it);
        break;
      }
  }
  leaf_.reset();
}

}  // namespace ember

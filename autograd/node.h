// The autograd graph: nodes (backward functions), edges, saved tensors, and each tensor's
// autograd metadata.
//
// Note [Graph ownership]: a differentiable output owns its grad_fn Node (shared_ptr); a Node owns
// the Nodes of its inputs through its edges, so the graph lives exactly as long as some output
// that can reach it. Leaves are reached through an AccumulateGrad node, which holds only a weak
// reference back to the leaf's metadata, so the graph never keeps a leaf's gradient alive.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

class Node;

struct Edge {
  std::shared_ptr<Node> fn;  // null: this input needs no gradient
  uint32_t input_nr = 0;     // which of fn's gradient inputs this edge feeds
  bool valid() const { return fn != nullptr; }
};

// Shape, dtype and device a gradient must have, checked at every edge.
struct GradMeta {
  Shape shape;
  DType dtype = kFloat32;
  Device device;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  // Gradients w.r.t. this node's inputs (one per next edge; undefined where none), from the
  // gradients w.r.t. its outputs (undefined entries mean zero).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  virtual std::string name() const = 0;
  // Frees saved tensors after a backward pass that does not retain the graph.
  virtual void release_saved() {}

  std::vector<Edge> next_edges;
  std::vector<GradMeta> output_meta;  // one per output of the forward op
  uint64_t sequence_nr;               // creation order: later nodes run first
};

// A tensor saved for backward, with the version it had when saved: using it after an in-place
// change is an error (the gradient would be silently wrong).
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t) : t_(t), version_(t.defined() ? t.version() : 0) {}
  Tensor unpack(const Node& owner) const;
  void reset() { t_ = Tensor(); released_ = true; }
  bool defined() const { return t_.defined(); }

 private:
  Tensor t_;
  uint32_t version_ = 0;
  bool released_ = false;
};

// The autograd slot of a tensor (runtime/autograd_meta.h's interface).
class AutogradMeta final : public AutogradMetaInterface {
 public:
  bool requires_grad() const override { return requires_grad_ || grad_fn != nullptr; }

  bool requires_grad_ = false;  // set on leaves by requires_grad_()
  Tensor grad;                  // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;
  bool retains_grad = false;
  // Run by AccumulateGrad after each accumulation into `grad`, in registration order, with the
  // leaf (autograd/engine.h, register_post_accumulate_grad_hook). Keyed by a handle id.
  std::vector<std::pair<uint64_t, std::function<void(const Tensor&)>>> post_accumulate_grad_hooks;
};

// The metadata of t, created on first use.
AutogradMeta& autograd_meta(const Tensor& t);
// nullptr when t has none.
AutogradMeta* autograd_meta_if(const Tensor& t);

// The edge a gradient for `t` should flow along: its grad_fn, or its leaf accumulator, or none.
Edge gradient_edge(const Tensor& t);

// Accumulates incoming gradients into a leaf's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(const Tensor& leaf);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  // The leaf it accumulates into (undefined once the leaf is gone), as PyTorch's .variable.
  Tensor variable() const { return Tensor(leaf_.lock()); }

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

}  // namespace ember

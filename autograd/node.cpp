#include "autograd/node.h"

#include <atomic>

#include "autograd/grad_mode.h"
#include "ops/elementwise.h"

namespace ember {

namespace {
thread_local bool grad_enabled = true;
std::atomic<uint64_t> next_sequence_nr{0};
}  // namespace

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

Node::Node() : sequence_nr(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

Tensor SavedTensor::unpack(const Node& owner) const {
  EMBER_CHECK_VALUE(!released_, "autograd: trying to backward through ", owner.name(),
                    " a second time, after its saved tensors were freed; pass "
                    "retain_graph=true to the first backward if you need to backward twice");
  if (!t_.defined()) return t_;
  EMBER_CHECK_VALUE(t_.version() == version_,
                    "autograd: a tensor of shape ", t_.shape(), " saved by ", owner.name(),
                    " for the backward pass was modified in place (it is at version ",
                    t_.version(), "; expected version ", version_,
                    "). Clone it before modifying it, or avoid the in-place op.");
  return t_;
}

AutogradMeta& autograd_meta(const Tensor& t) {
  auto* m = dynamic_cast<AutogradMeta*>(t.autograd_meta());
  if (m) return *m;
  auto fresh = std::make_shared<AutogradMeta>();
  AutogradMeta& ref = *fresh;
  t.set_autograd_meta(std::move(fresh));
  return ref;
}

AutogradMeta* autograd_meta_if(const Tensor& t) {
  return dynamic_cast<AutogradMeta*>(t.autograd_meta());
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = autograd_meta_if(t);
  if (!m) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (!m->requires_grad_) return {};
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->grad_accumulator = acc;
  }
  return {acc, 0};
}

AccumulateGrad::AccumulateGrad(const Tensor& leaf) : leaf_(leaf.impl_ptr()) {
  output_meta.push_back({leaf.shape(), leaf.dtype(), leaf.device()});
}

namespace {

// Note [A leaf's first gradient]
// The first gradient a leaf receives becomes its .grad. One that nothing else refers to (this
// call holds its only handle and the only handle to its memory; contiguous, filling its buffer,
// with no history) is kept as it is, as PyTorch's AccumulateGrad does: a layer's input gradient
// is a fresh tensor, and copying it cost a pass over its memory per leaf. Any other is copied,
// since it may alias another buffer of the pass (one gradient sent along two edges, a view of
// it, a gradient the caller passed to backward).
bool sole_owner(const Tensor& g) {
  return g.impl_ptr().use_count() == 1 && g.storage().use_count() == 1 && g.is_contiguous() &&
         g.offset() == 0 &&
         g.storage()->nbytes == static_cast<size_t>(g.numel()) * g.element_size() &&
         g.autograd_meta() == nullptr;
}

}  // namespace

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  std::shared_ptr<TensorImpl> impl = leaf_.lock();
  if (!impl || grads.empty() || !grads[0].defined()) return {};
  Tensor leaf(impl);
  AutogradMeta& m = autograd_meta(leaf);
  if (m.grad.defined())
    m.grad = ops::add(m.grad, grads[0]);
  else  // Note [A leaf's first gradient]
    m.grad = sole_owner(grads[0]) ? std::move(grads[0]) : grads[0].contiguous().clone();
  // A copy: a hook may remove itself (or others) while it runs.
  const auto hooks = m.post_accumulate_grad_hooks;
  for (const auto& [id, hook] : hooks) hook(leaf);
  return {};
}

}  // namespace ember

// Leaves and their gradients (autograd/leaf.h): the tensor's autograd slot read and written.
#include "autograd/leaf.h"

#include "autograd/node.h"

namespace ember {

Tensor& requires_grad_(Tensor& t, bool requires) {
  AutogradMeta* existing = autograd_meta_if(t);
  EMBER_CHECK_VALUE(!(existing && existing->grad_fn),
                    "requires_grad_: only leaf tensors can be "
                    "marked; this one was computed by ",
                    existing ? existing->grad_fn->name() : "", " (use detach() to make a leaf)");
  EMBER_CHECK_DTYPE(!requires || is_floating(t.dtype()),
                    "requires_grad_: only floating-point tensors can require grad, got ",
                    t.dtype());
  autograd_meta(t).requires_grad_ = requires;
  return t;
}

Tensor grad(const Tensor& t) {
  AutogradMeta* m = autograd_meta_if(t);
  return m ? m->grad : Tensor();
}

void zero_grad(Tensor& t) {
  if (AutogradMeta* m = autograd_meta_if(t)) m->grad = Tensor();
}

bool is_leaf(const Tensor& t) {
  AutogradMeta* m = autograd_meta_if(t);
  return !m || !m->grad_fn;
}

Tensor detach(const Tensor& t) {
  if (!t.defined()) return t;
  Tensor out = t.as_strided(t.shape(), t.strides(), t.offset());
  out.impl()->base.reset();  // shares t's memory, but autograd does not see it as t's view
  return out;
}

}  // namespace ember

// Leaves and their gradients: marking a tensor as requiring grad, reading and clearing the
// gradient a backward pass accumulated into it, and detaching a tensor from its history.
#pragma once

#include "runtime/tensor.h"

namespace ember {

// Marks a leaf as requiring grad. requires: a floating dtype; t is a leaf (no grad_fn).
Tensor& requires_grad_(Tensor& t, bool requires = true);
// The accumulated gradient of a leaf (undefined until a backward reaches it).
Tensor grad(const Tensor& t);
// Clears a leaf's gradient.
void zero_grad(Tensor& t);
bool is_leaf(const Tensor& t);
// A tensor sharing t's storage (and version counter) with no autograd history.
Tensor detach(const Tensor& t);

}  // namespace ember

// In-place ops under autograd, as PyTorch has them: `x.add_(y)`, `x[idx] = v`, `x.relu_()`.
//
// Note [In-place ops]
// An in-place op writes the new values into x's memory and makes x's history that of the result,
// so gradients flow as if the op had been out of place:
//  - nothing requires grad (or grad mode is off): the values are written, nothing else;
//  - x is a leaf that requires grad: an error (its .grad would describe a tensor that no longer
//    exists), as in PyTorch;
//  - otherwise the result is computed out of place from a snapshot of x (a copy, so that the
//    result's backward never reads x's overwritten memory), written into x, and x's grad_fn
//    becomes the result's;
//  - when x is a view of another tensor (its base: x[0], x.t(), ...), the base's history is
//    rebased too, through a node that routes the gradient of the written region to the result
//    and the rest to the base's old history (PyTorch's CopySlices); x then reads its history from
//    the base. A view of a leaf that requires grad is refused like the leaf itself.
// Writes bump the version counter, so a tensor saved for an earlier backward and overwritten
// since is still reported when that backward runs.
#pragma once

#include <functional>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

// Runs the in-place op `op` on x: f(snapshot) computes the new values (a differentiable function
// of a tensor equal to x, and of `others`); its result must broadcast to x's shape and its dtype
// convert to x's by PyTorch's in-place rule (DTypeError otherwise: an integer tensor cannot take
// a floating result). Returns x.
Tensor& apply_inplace(const char* op, Tensor& x, const std::vector<Tensor>& others,
                      const std::function<Tensor(const Tensor& snapshot)>& f);

}  // namespace ember

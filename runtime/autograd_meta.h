// The autograd slot of a tensor. runtime/ declares only this interface; autograd/ implements it
// (grad, grad_fn, ...) so that runtime/ never names an autograd type.
#pragma once

namespace ember {

class AutogradMetaInterface {
 public:
  virtual ~AutogradMetaInterface() = default;
  virtual bool requires_grad() const = 0;
};

}  // namespace ember

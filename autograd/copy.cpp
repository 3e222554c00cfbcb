// Differentiable copies and conversions (autograd/copy.h): each backward is the gradient itself,
// moved and cast back to the input's device and dtype where the forward changed them.
#include "autograd/copy.h"

#include "autograd/function.h"

namespace ember {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

Tensor to(const Tensor& x, Device device, DType dtype) {
  Tensor out = x.to(device, dtype);
  if (out.is_same(x) || !any_requires_grad({x})) return out;
  EMBER_CHECK_DTYPE(is_floating(dtype), "to: cannot cast a tensor that requires grad to ",
                    dtype_name(dtype), " (gradients need a floating dtype); detach() it first");
  Device d0 = x.device();
  DType t0 = x.dtype();
  return record("ToCopyBackward", out, {x}, {},
                [d0, t0](const Tensor& g, const Saved&) { return Grads{g.to(d0, t0)}; });
}

Tensor to(const Tensor& x, Device device) {
  return to(x, device, x.dtype());
}
Tensor to(const Tensor& x, DType dtype) {
  return to(x, x.device(), dtype);
}

Tensor contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  return clone(x);
}

Tensor clone(const Tensor& x) {
  return record("CloneBackward", x.clone(), {x}, {},
                [](const Tensor& g, const Saved&) { return Grads{g}; });
}

}  // namespace ember

// Differentiable shape changes (autograd/shape.h): each backward undoes the view on the
// gradient.
#include "autograd/shape.h"

#include "autograd/function.h"

namespace ember {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

Tensor reshape(const Tensor& a, const Shape& shape) {
  Shape from = a.shape();
  return record("ReshapeBackward", a.reshape(shape), {a}, {},
                [from](const Tensor& g, const Saved&) { return Grads{g.reshape(from)}; });
}

Tensor transpose(const Tensor& a, int64_t d0, int64_t d1) {
  return record("TransposeBackward", a.transpose(d0, d1), {a}, {},
                [d0, d1](const Tensor& g, const Saved&) { return Grads{g.transpose(d0, d1)}; });
}

Tensor permute(const Tensor& a, const std::vector<int64_t>& dims) {
  std::vector<int64_t> inverse(dims.size());
  Tensor out = a.permute(dims);  // validates dims
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[wrap_dim(dims[i], a.dim(), "permute")] = static_cast<int64_t>(i);
  return record("PermuteBackward", out, {a}, {},
                [inverse](const Tensor& g, const Saved&) { return Grads{g.permute(inverse)}; });
}

}  // namespace ember

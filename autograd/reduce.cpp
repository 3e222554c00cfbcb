// Differentiable reductions (autograd/reduce.h): the gradient of a reduction is the output
// gradient spread back over the reduced dims.
#include "autograd/reduce.h"

#include "autograd/function.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ember {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {
// The gradient of a reduction, reshaped with the reduced dims kept and expanded to `shape`.
Tensor expand_reduced(const Tensor& g, const Shape& shape, std::vector<int64_t> dims,
                      bool keepdim) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (dims.empty())
    for (int64_t d = 0; d < nd; ++d) dims.push_back(d);
  Shape kept = shape;
  for (int64_t d : dims) kept[wrap_dim(d, nd, "sum")] = 1;
  Tensor gk = keepdim ? g : g.reshape(kept);
  return gk.expand(shape);
}
}  // namespace

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  Shape shape = a.shape();
  return record("SumBackward", ops::sum(a, dims, keepdim), {a}, {},
                [shape, dims, keepdim](const Tensor& g, const Saved&) {
                  return Grads{expand_reduced(g, shape, dims, keepdim)};
                });
}

Tensor mean(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  Shape shape = a.shape();
  Tensor out = ops::mean(a, dims, keepdim);
  double count = out.numel() == 0 ? 0.0 : static_cast<double>(a.numel()) / out.numel();
  return record("MeanBackward", out, {a}, {},
                [shape, dims, keepdim, count](const Tensor& g, const Saved&) {
                  return Grads{expand_reduced(ops::mul(g, 1.0 / count), shape, dims, keepdim)};
                });
}

}  // namespace ember

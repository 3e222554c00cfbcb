// Differentiable reductions (autograd/reduce.h): the gradient of a reduction is the output
// gradient spread back over the reduced dims (evenly, or to the extremes for amax/amin); var and
// std are composites of the differentiable functions.
#include "autograd/reduce.h"

#include "autograd/autocast.h"
#include "autograd/elementwise.h"
#include "autograd/function.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ember {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {
// `shape` with the reduced dims (all dims when `dims` is empty) kept as size 1.
Shape kept_shape(const Shape& shape, const std::vector<int64_t>& dims) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  Shape kept = shape;
  if (dims.empty()) {
    for (int64_t& s : kept) s = 1;
  } else {
    for (int64_t d : dims) kept[wrap_dim(d, nd, "reduce")] = 1;
  }
  return kept;
}

// The gradient of a reduction, reshaped with the reduced dims kept and expanded to `shape`.
Tensor expand_reduced(const Tensor& g, const Shape& shape, const std::vector<int64_t>& dims,
                      bool keepdim) {
  Tensor gk = keepdim ? g : g.reshape(kept_shape(shape, dims));
  return gk.expand(shape);
}

// amax/amin: the gradient goes to the extreme elements, shared evenly among ties (as torch.amax).
Tensor extreme(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim, bool is_max) {
  Tensor out = is_max ? ops::amax(a, dims, keepdim) : ops::amin(a, dims, keepdim);
  Shape kept = kept_shape(a.shape(), dims);
  return record(is_max ? "AmaxBackward" : "AminBackward", out, {a}, {a, out},
                [kept, dims](const Tensor& g, const Saved& s) {
                  Tensor mask = ops::eq(s[0], s[1].reshape(kept)).to(s[0].dtype());
                  Tensor count = ops::sum(mask, dims, true);
                  return Grads{ops::div(ops::mul(mask, g.reshape(kept)), count)};
                });
}
}  // namespace

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  if (autocast_applies({&a}))
    return autocast_call("sum", {a}, [&](const auto& c) { return sum(c[0], dims, keepdim); });
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

Tensor amax(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return extreme(a, dims, keepdim, true);
}

Tensor amin(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return extreme(a, dims, keepdim, false);
}

Tensor var(const Tensor& a, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  if (!any_requires_grad({a})) return ops::var(a, dims, correction, keepdim);
  int64_t n = 1;
  if (dims.empty()) {
    n = a.numel();
  } else {
    for (int64_t d : dims) n *= a.size(d);
  }
  // Composite, so autograd differentiates it: sum((a - mean)^2) / (n - correction).
  Tensor d = sub(a, mean(a, dims, true));
  return mul(sum(mul(d, d), dims, keepdim), 1.0 / static_cast<double>(n - correction));
}

Tensor std(const Tensor& a, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return sqrt(var(a, dims, correction, keepdim));
}

Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  return ops::argmax(a, dim.value_or(ops::kAllDims), keepdim);
}

Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  return ops::argmin(a, dim.value_or(ops::kAllDims), keepdim);
}

}  // namespace ember

// Differentiable sorting and scans (autograd/sort.h). The values of a sort are x's elements at
// the returned positions, so their gradient is scattered back to those positions; the positions
// are distinct, so no two gradients meet.
#include "autograd/sort.h"

#include "autograd/function.h"
#include "autograd/shape.h"
#include "ops/index.h"
#include "ops/scan.h"

namespace ember {
namespace {

using Saved = std::vector<Tensor>;
using Grads = std::vector<Tensor>;

// values = x's elements at `indices` along dim d (indices of values' shape).
Tensor record_picked(const char* name, const Tensor& x, Tensor values, const Tensor& indices,
                     int64_t d) {
  const Shape shape = x.shape();
  const TensorOptions opts(x.dtype(), x.device());
  return record(name, std::move(values), {x}, {indices},
                [shape, opts, d](const Tensor& g, const Saved& s) {
                  Tensor z = zeros(shape, opts);
                  if (shape.empty()) return Grads{g.reshape({})};
                  ops::scatter_(z, d, s[0], g.contiguous(), false, false);
                  return Grads{z};
                });
}

int64_t dim_of(const Tensor& x, int64_t dim, const char* op) {
  return wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
}

}  // namespace

SortResult sort(const Tensor& x, int64_t dim, bool descending) {
  SortResult r = ops::sort(x, dim, descending);
  r.values = record_picked("SortBackward", x, r.values, r.indices, dim_of(x, dim, "sort"));
  return r;
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  return ops::argsort(x, dim, descending);
}

SortResult topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  SortResult r = ops::topk(x, k, dim, largest, sorted);
  r.values = record_picked("TopkBackward", x, r.values, r.indices, dim_of(x, dim, "topk"));
  return r;
}

SortResult kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  SortResult r = ops::kthvalue(x, k, dim, keepdim);
  const int64_t d = dim_of(x, dim, "kthvalue");
  const bool squeezed = !keepdim && x.dim() > 0;
  const Tensor idx = squeezed ? r.indices.unsqueeze(d) : r.indices;
  const Tensor picked = record_picked("KthvalueBackward", x,
                                      squeezed ? r.values.unsqueeze(d) : r.values, idx, d);
  r.values = squeezed ? squeeze(picked, d) : picked;
  return r;
}

UniqueResult unique(const Tensor& x, bool return_inverse, bool return_counts,
                    std::optional<int64_t> dim) {
  return ops::unique(x, return_inverse, return_counts, dim);
}

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  const Tensor y = ops::cumsum(x, dim, dtype);
  const DType xt = x.dtype();
  return record("CumsumBackward", y, {x}, {}, [dim, xt](const Tensor& g, const Saved&) {
    Tensor gx = ops::cumsum(g, dim, std::nullopt, /*reverse=*/true);
    return Grads{gx.dtype() == xt ? gx : gx.to(xt)};
  });
}

Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  const Tensor xc = dtype && *dtype != x.dtype() ? x.to(*dtype) : x;
  const Tensor y = ops::cumprod(xc, dim);
  const DType xt = x.dtype();
  return record("CumprodBackward", y, {x}, {xc}, [dim, xt](const Tensor& g, const Saved& s) {
    Tensor gx = ops::cumprod_backward(s[0], g, dim);
    return Grads{gx.dtype() == xt ? gx : gx.to(xt)};
  });
}

}  // namespace ember

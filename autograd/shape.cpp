// Differentiable shape changes (autograd/shape.h): each backward undoes the view on the gradient
// (reshape, transpose, permute directly; the others through record_view); cat and stack hand each
// input its slice of the gradient.
#include "autograd/shape.h"

#include "autograd/autocast.h"
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

Tensor view(const Tensor& a, const Shape& shape) {
  return record_view("ViewBackward", a, [shape](const Tensor& x) { return x.view(shape); });
}

Tensor flatten(const Tensor& a, int64_t start_dim, int64_t end_dim) {
  return record_view("FlattenBackward", a, [start_dim, end_dim](const Tensor& x) {
    return x.flatten(start_dim, end_dim);
  });
}

Tensor squeeze(const Tensor& a) {
  return record_view("SqueezeBackward", a, [](const Tensor& x) { return x.squeeze(); });
}

Tensor squeeze(const Tensor& a, int64_t d) {
  return record_view("SqueezeBackward", a, [d](const Tensor& x) { return x.squeeze(d); });
}

Tensor unsqueeze(const Tensor& a, int64_t d) {
  return record_view("UnsqueezeBackward", a, [d](const Tensor& x) { return x.unsqueeze(d); });
}

Tensor slice(const Tensor& a, int64_t d, int64_t start, int64_t end, int64_t step) {
  return record_view("SliceBackward", a, [d, start, end, step](const Tensor& x) {
    return x.slice(d, start, end, step);
  });
}

Tensor select(const Tensor& a, int64_t d, int64_t index) {
  return record_view("SelectBackward", a,
                     [d, index](const Tensor& x) { return x.select(d, index); });
}

Tensor expand(const Tensor& a, const Shape& shape) {
  Tensor out = a.expand(shape);
  Shape from = a.shape();
  return record("ExpandBackward", out, {a}, {},
                [from](const Tensor& g, const Saved&) { return Grads{sum_to(g, from)}; });
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  if (autocast_applies(xs))
    return autocast_call("cat", xs, [&](const auto& c) { return cat(c, dim); });
  EMBER_CHECK_VALUE(!xs.empty(), "cat: expected a non-empty list of tensors");
  const Tensor& first = xs[0];
  dim = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  DType dt = first.dtype();
  int64_t total = 0;
  for (const Tensor& x : xs) {
    EMBER_CHECK_SHAPE(x.dim() == first.dim(),
                      "cat: tensors must have the same number of dims, got ", first.shape(),
                      " and ", x.shape());
    for (int64_t d = 0; d < x.dim(); ++d)
      EMBER_CHECK_SHAPE(d == dim || x.size(d) == first.size(d), "cat: shapes ", first.shape(),
                        " and ", x.shape(), " differ outside dim ", dim);
    EMBER_CHECK_DEVICE(x.device() == first.device(), "cat: tensors on ", first.device(), " and ",
                       x.device());
    total += x.size(dim);
    dt = promote_types(dt, x.dtype());
  }
  shape[dim] = total;
  Tensor out = empty(shape, TensorOptions(dt, first.device()));
  std::vector<int64_t> sizes;
  std::vector<DType> dtypes;
  int64_t off = 0;
  for (const Tensor& x : xs) {
    out.slice(dim, off, off + x.size(dim)).copy_(x);
    off += x.size(dim);
    sizes.push_back(x.size(dim));
    dtypes.push_back(x.dtype());
  }
  return record("CatBackward", out, xs, {}, [dim, sizes, dtypes](const Tensor& g, const Saved&) {
    Grads grads;
    int64_t o = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      grads.push_back(g.slice(dim, o, o + sizes[i]).to(dtypes[i]).contiguous());
      o += sizes[i];
    }
    return grads;
  });
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  if (autocast_applies(xs))
    return autocast_call("stack", xs, [&](const auto& c) { return stack(c, dim); });
  EMBER_CHECK_VALUE(!xs.empty(), "stack: expected a non-empty list of tensors");
  dim = wrap_dim(dim, xs[0].dim() + 1, "stack");
  std::vector<Tensor> u;
  for (const Tensor& x : xs) {
    EMBER_CHECK_SHAPE(x.shape() == xs[0].shape(),
                      "stack: every tensor must have the same shape, got ", xs[0].shape(), " and ",
                      x.shape());
    Shape s = x.shape();
    s.insert(s.begin() + dim, 1);
    u.push_back(reshape(x, s));
  }
  return cat(u, dim);
}

namespace {

// x's leading (batch) dims, and the last three.
Shape leading(const Tensor& x) {
  return Shape(std::vector<int64_t>(x.shape().begin(), x.shape().end() - 3));
}

Shape joined(Shape head, std::initializer_list<int64_t> tail) {
  for (int64_t v : tail) head.push_back(v);
  return head;
}

// The dims of a [*, a, b, c, d, e] view permuted by `order` (0-based among the last five).
std::vector<int64_t> permutation(int64_t lead, std::initializer_list<int64_t> order) {
  std::vector<int64_t> p;
  for (int64_t d = 0; d < lead; ++d) p.push_back(d);
  for (int64_t o : order) p.push_back(lead + o);
  return p;
}

}  // namespace

Tensor pixel_shuffle(const Tensor& x, int64_t r) {
  const char* op = "pixel_shuffle";
  EMBER_CHECK_VALUE(r >= 1, op, ": upscale_factor must be positive, got ", r);
  EMBER_CHECK_SHAPE(x.dim() >= 3, op, ": expected an input of at least 3 dims [*, C, H, W], got ",
                    "shape ", x.shape());
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  EMBER_CHECK_SHAPE(c % (r * r) == 0, op, ": the channels (", c, ", input shape ", x.shape(),
                    ") must be divisible by upscale_factor^2 = ", r * r);
  const Shape lead = leading(x);
  const int64_t n = static_cast<int64_t>(lead.size()), oc = c / (r * r);
  const Tensor v = reshape(x, joined(lead, {oc, r, r, h, w}));
  return reshape(permute(v, permutation(n, {0, 3, 1, 4, 2})), joined(lead, {oc, h * r, w * r}));
}

Tensor pixel_unshuffle(const Tensor& x, int64_t r) {
  const char* op = "pixel_unshuffle";
  EMBER_CHECK_VALUE(r >= 1, op, ": downscale_factor must be positive, got ", r);
  EMBER_CHECK_SHAPE(x.dim() >= 3, op, ": expected an input of at least 3 dims [*, C, H, W], got ",
                    "shape ", x.shape());
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  EMBER_CHECK_SHAPE(h % r == 0 && w % r == 0, op, ": the height and width (input shape ",
                    x.shape(), ") must be divisible by downscale_factor = ", r);
  const Shape lead = leading(x);
  const int64_t n = static_cast<int64_t>(lead.size());
  const Tensor v = reshape(x, joined(lead, {c, h / r, r, w / r, r}));
  return reshape(permute(v, permutation(n, {0, 2, 4, 1, 3})),
                 joined(lead, {c * r * r, h / r, w / r}));
}

}  // namespace ember

// Differentiable operations the bindings need beyond the autograd API: views (indexing, expand),
// casts and copies, max/min and var/std reductions, where, tensor powers, cat/stack. Each runs
// the autograd-free op and records its backward with ember::record (autograd/function.h).
#include "autograd/function.h"
#include "common.h"

namespace ember::py {

Tensor diff_view(const char* name, const Tensor& x,
                 const std::function<Tensor(const Tensor&)>& view_fn) {
  Tensor out = view_fn(x);
  if (!any_requires_grad({x})) return out;
  Shape shape = x.shape();
  TensorOptions opts(x.dtype(), x.device());
  // The gradient of a view: zeros of the base's shape with the same view of them filled in.
  return record(name, out, {x}, {},
                [view_fn, shape, opts](const Tensor& g, const std::vector<Tensor>&) {
                  Tensor z = zeros(shape, opts);
                  view_fn(z).copy_(g);
                  return std::vector<Tensor>{z};
                });
}

Tensor diff_to(const Tensor& x, Device device, DType dtype) {
  Tensor out = x.to(device, dtype);
  if (out.is_same(x) || !any_requires_grad({x})) return out;
  EMBER_CHECK_DTYPE(is_floating(dtype), "to: cannot cast a tensor that requires grad to ",
                    dtype_name(dtype), " (gradients need a floating dtype); detach() it first");
  Device d0 = x.device();
  DType t0 = x.dtype();
  return record("ToCopyBackward", out, {x}, {},
                [d0, t0](const Tensor& g, const std::vector<Tensor>&) {
                  return std::vector<Tensor>{g.to(d0, t0)};
                });
}

Tensor diff_contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor out = x.clone();
  if (!any_requires_grad({x})) return out;
  return record("CloneBackward", out, {x}, {},
                [](const Tensor& g, const std::vector<Tensor>&) { return std::vector<Tensor>{g}; });
}

Tensor diff_expand(const Tensor& x, const Shape& shape) {
  Tensor out = x.expand(shape);
  if (!any_requires_grad({x})) return out;
  Shape s = x.shape();
  return record("ExpandBackward", out, {x}, {}, [s](const Tensor& g, const std::vector<Tensor>&) {
    return std::vector<Tensor>{sum_to(g, s)};
  });
}

namespace {

Shape keepdim_shape(const Shape& s, const std::vector<int64_t>& dims) {
  Shape k = s;
  if (dims.empty()) {
    for (auto& v : k) v = 1;
  } else {
    for (int64_t d : dims) k[wrap_dim(d, static_cast<int64_t>(s.size()), "reduce")] = 1;
  }
  return k;
}

}  // namespace

Tensor diff_amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, bool is_max) {
  Tensor out = is_max ? ops::amax(x, dims, keepdim) : ops::amin(x, dims, keepdim);
  if (!any_requires_grad({x})) return out;
  Shape k = keepdim_shape(x.shape(), dims);
  // The gradient goes to the extreme elements, shared evenly among ties (as torch.amax).
  return record(is_max ? "AmaxBackward" : "AminBackward", out, {x}, {x, out},
                [k, dims](const Tensor& g, const std::vector<Tensor>& saved) {
                  Tensor x = saved[0];
                  Tensor v = saved[1].reshape(k);
                  Tensor mask = ops::eq(x, v).to(x.dtype());
                  Tensor count = ops::sum(mask, dims, true);
                  return std::vector<Tensor>{ops::div(ops::mul(mask, g.reshape(k)), count)};
                });
}

Tensor diff_var(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction,
                bool keepdim) {
  if (!any_requires_grad({x})) return ops::var(x, dims, correction, keepdim);
  int64_t n = 1;
  if (dims.empty()) {
    n = x.numel();
  } else {
    for (int64_t d : dims) n *= x.size(d);
  }
  // Composite, so autograd differentiates it: sum((x - mean)^2) / (n - correction).
  Tensor d = sub(x, mean(x, dims, true));
  return mul(sum(mul(d, d), dims, keepdim), 1.0 / static_cast<double>(n - correction));
}

Tensor diff_where(const Tensor& c, const Tensor& a, const Tensor& b) {
  EMBER_CHECK_DTYPE(c.dtype() == kBool, "where: condition must be a bool tensor, got ", c.dtype());
  Tensor out = ops::where(c, a, b);
  if (!any_requires_grad({a, b})) return out;
  Shape sa = a.shape(), sb = b.shape();
  DType ta = a.dtype(), tb = b.dtype();
  return record("WhereBackward", out, {a, b}, {c},
                [sa, sb, ta, tb](const Tensor& g, const std::vector<Tensor>& saved) {
                  Tensor zero = zeros({}, TensorOptions(g.dtype(), g.device()));
                  Tensor ga = sum_to(ops::where(saved[0], g, zero), sa).to(ta);
                  Tensor gb = sum_to(ops::where(saved[0], zero, g), sb).to(tb);
                  return std::vector<Tensor>{ga, gb};
                });
}

Tensor diff_pow(const Tensor& a, const Tensor& b) {
  Tensor out = ops::pow(a, b);
  if (!any_requires_grad({a, b})) return out;
  Shape sa = a.shape(), sb = b.shape();
  DType ta = a.dtype(), tb = b.dtype();
  return record("PowBackward", out, {a, b}, {a, b, out},
                [sa, sb, ta, tb](const Tensor& g, const std::vector<Tensor>& s) {
                  const Tensor &a = s[0], &b = s[1], &out = s[2];
                  Tensor ga = ops::mul(g, ops::mul(b, ops::pow(a, ops::add(b, -1.0))));
                  Tensor gb = ops::mul(g, ops::mul(out, ops::log(a)));
                  return std::vector<Tensor>{sum_to(ga, sa).to(ta), sum_to(gb, sb).to(tb)};
                });
}

Tensor diff_cat(const std::vector<Tensor>& xs, int64_t dim) {
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
  if (!any_requires_grad(xs)) return out;
  return record("CatBackward", out, xs, {},
                [dim, sizes, dtypes](const Tensor& g, const std::vector<Tensor>&) {
                  std::vector<Tensor> grads;
                  int64_t o = 0;
                  for (size_t i = 0; i < sizes.size(); ++i) {
                    grads.push_back(g.slice(dim, o, o + sizes[i]).to(dtypes[i]).contiguous());
                    o += sizes[i];
                  }
                  return grads;
                });
}

Tensor diff_stack(const std::vector<Tensor>& xs, int64_t dim) {
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
  return diff_cat(u, dim);
}

}  // namespace ember::py

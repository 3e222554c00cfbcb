// Differentiable shape changes (autograd/shape.h): each backward undoes the view on the gradient
// (reshape, transpose, permute directly; the others through record_view); cat and stack hand each
// input its slice of the gradient.
#include "autograd/shape.h"

#include "autograd/autocast.h"
#include "autograd/elementwise.h"
#include "autograd/function.h"
#include "autograd/index.h"
#include "ops/elementwise.h"
#include "ops/flip.h"
#include "ops/index.h"
#include "ops/reduce.h"
#include "ops/scan.h"

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

Tensor narrow(const Tensor& a, int64_t d, int64_t start, int64_t length) {
  EMBER_CHECK_INDEX(a.dim() > 0, "narrow: cannot narrow a 0-d tensor");
  const int64_t dim = wrap_dim(d, a.dim(), "narrow"), n = a.size(dim);
  const int64_t s = start < 0 ? start + n : start;
  EMBER_CHECK_INDEX(s >= 0 && s <= n, "narrow: start ", start, " is out of range for dimension ",
                    dim, " of size ", n);
  EMBER_CHECK_INDEX(length >= 0 && s + length <= n, "narrow: start (", s, ") + length (", length,
                    ") exceeds dimension ", dim, " of size ", n);
  return slice(a, dim, s, s + length);
}

std::vector<Tensor> split(const Tensor& a, int64_t size, int64_t dim) {
  EMBER_CHECK_INDEX(a.dim() > 0, "split: cannot split a 0-d tensor");
  const int64_t d = wrap_dim(dim, a.dim(), "split"), n = a.size(d);
  EMBER_CHECK_VALUE(size > 0 || (size == 0 && n == 0), "split: split_size must be positive, got ",
                    size);
  std::vector<Tensor> out;
  for (int64_t s = 0; s < n || (n == 0 && out.empty()); s += std::max<int64_t>(size, 1))
    out.push_back(slice(a, d, s, std::min(n, s + size)));
  return out;
}

std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& sizes, int64_t dim) {
  EMBER_CHECK_INDEX(a.dim() > 0, "split: cannot split a 0-d tensor");
  const int64_t d = wrap_dim(dim, a.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    EMBER_CHECK_VALUE(s >= 0, "split: sizes must be non-negative, got ", Shape(sizes));
    total += s;
  }
  EMBER_CHECK_VALUE(total == a.size(d), "split: sizes ", Shape(sizes), " add up to ", total,
                    ", not to the size ", a.size(d), " of dimension ", d);
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(a, d, at, at + s));
    at += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  EMBER_CHECK_VALUE(chunks > 0, "chunk: chunks must be positive, got ", chunks);
  EMBER_CHECK_INDEX(a.dim() > 0, "chunk: cannot chunk a 0-d tensor");
  const int64_t n = a.size(wrap_dim(dim, a.dim(), "chunk"));
  return split(a, std::max<int64_t>((n + chunks - 1) / chunks, n == 0 ? 0 : 1), dim);
}

std::vector<Tensor> unbind(const Tensor& a, int64_t dim) {
  EMBER_CHECK_INDEX(a.dim() > 0, "unbind: cannot unbind a 0-d tensor");
  const int64_t d = wrap_dim(dim, a.dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < a.size(d); ++i) out.push_back(select(a, d, i));
  return out;
}

Tensor movedim(const Tensor& a, const std::vector<int64_t>& source,
               const std::vector<int64_t>& destination) {
  EMBER_CHECK_VALUE(source.size() == destination.size(), "movedim: ", source.size(),
                    " source dims and ", destination.size(), " destination dims; expected as many");
  const int64_t nd = a.dim();
  std::vector<int64_t> order(static_cast<size_t>(nd), -1);
  std::vector<bool> moved(static_cast<size_t>(nd), false);
  for (size_t i = 0; i < source.size(); ++i) {
    const int64_t s = wrap_dim(source[i], nd, "movedim"), t = wrap_dim(destination[i], nd, "movedim");
    EMBER_CHECK_VALUE(!moved[s] && order[t] < 0, "movedim: repeated dim in ", Shape(source),
                      " or ", Shape(destination));
    order[t] = s;
    moved[s] = true;
  }
  int64_t next = 0;
  for (int64_t& o : order) {
    if (o >= 0) continue;
    while (moved[next]) ++next;
    o = next++;
  }
  return permute(a, order);
}

Tensor flip(const Tensor& a, const std::vector<int64_t>& dims) {
  return record("FlipBackward", ops::flip(a, dims), {a}, {},
                [dims](const Tensor& g, const Saved&) { return Grads{ops::flip(g, dims)}; });
}

Tensor roll(const Tensor& a, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  std::vector<int64_t> back;
  for (int64_t s : shifts) back.push_back(-s);
  return record("RollBackward", ops::roll(a, shifts, dims), {a}, {},
                [back, dims](const Tensor& g, const Saved&) {
                  return Grads{ops::roll(g, back, dims)};
                });
}

Tensor repeat(const Tensor& a, const std::vector<int64_t>& sizes) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  EMBER_CHECK_VALUE(nd >= a.dim(), "repeat: ", nd, " repeat sizes for a tensor of ", a.dim(),
                    " dims; expected at least as many");
  // a viewed as [1, s0, 1, s1, ...] (leading dims 1), expanded to [r0, s0, r1, s1, ...], merged.
  Shape padded(static_cast<size_t>(nd - a.dim()), 1), interleaved, expanded, result;
  padded.insert(padded.end(), a.shape().begin(), a.shape().end());
  for (int64_t d = 0; d < nd; ++d) {
    EMBER_CHECK_VALUE(sizes[d] >= 0, "repeat: sizes must be non-negative, got ", Shape(sizes));
    interleaved.insert(interleaved.end(), {1, padded[d]});
    expanded.insert(expanded.end(), {sizes[d], padded[d]});
    result.push_back(sizes[d] * padded[d]);
  }
  return reshape(expand(reshape(a, interleaved), expanded), result);
}

Tensor tile(const Tensor& a, const std::vector<int64_t>& reps) {
  std::vector<int64_t> r(reps);
  if (static_cast<int64_t>(r.size()) < a.dim()) r.insert(r.begin(), a.dim() - r.size(), 1);
  return repeat(a, r);
}

Tensor repeat_interleave(const Tensor& a, int64_t repeats, std::optional<int64_t> dim) {
  EMBER_CHECK_VALUE(repeats >= 0, "repeat_interleave: repeats must be non-negative, got ", repeats);
  const Tensor x = dim ? a : reshape(a, {a.numel()});
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), "repeat_interleave") : 0;
  if (x.dim() == 0) return repeat_interleave(reshape(x, {1}), repeats, 0);
  Shape expanded = x.shape(), result = x.shape();
  expanded.insert(expanded.begin() + d + 1, repeats);
  result[d] *= repeats;
  return reshape(expand(unsqueeze(x, d + 1), expanded), result);
}

Tensor repeat_interleave(const Tensor& repeats) {
  const Device dev = repeats.device();
  EMBER_CHECK_DTYPE(repeats.dtype() == kInt64 || repeats.dtype() == kInt32,
                    "repeat_interleave: expected integer repeats, got ", repeats.dtype());
  EMBER_CHECK_SHAPE(repeats.dim() <= 1, "repeat_interleave: expected 1-D repeats, got shape ",
                    repeats.shape());
  const Tensor r = repeats.to(kInt64).reshape({repeats.numel()});
  if (r.numel() == 0) return empty({0}, {kInt64, dev});
  const Tensor ends = ops::cumsum(r, 0);
  // One wait: the total sizes the result (and the smallest repeat is checked).
  Tensor both = empty({2}, {kInt64, dev});
  both.select(0, 0).copy_(ops::amin(r));
  both.select(0, 1).copy_(ends.select(0, r.numel() - 1));
  const std::vector<int64_t> stats = both.to_vector<int64_t>();
  EMBER_CHECK_VALUE(stats[0] >= 0, "repeat_interleave: repeats must be non-negative, got ",
                    stats[0]);
  const int64_t total = stats[1];
  // Element i starts at ends[i] - r[i]: a mark there (marks add up where repeats are 0), then
  // a running count of the marks passed, less one, is the source element of each position.
  Tensor marks = zeros({total + 1}, {kInt64, dev});
  ops::scatter_(marks, 0, ops::sub(ends, r), ones({r.numel()}, {kInt64, dev}), true);
  return ops::sub(ops::cumsum(marks.slice(0, 0, total), 0), ones({}, {kInt64, dev}));
}

Tensor repeat_interleave(const Tensor& a, const Tensor& repeats, std::optional<int64_t> dim) {
  const Tensor x = dim ? a : reshape(a, {a.numel()});
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), "repeat_interleave") : 0;
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  EMBER_CHECK_SHAPE(repeats.numel() == n || repeats.numel() == 1, "repeat_interleave: ",
                    repeats.numel(), " repeats for a dimension of size ", n,
                    "; expected one per element, or one for all");
  const Tensor r = repeats.numel() == 1 && n != 1 ? repeats.reshape({1}).expand({n}) : repeats;
  return index_select(x.dim() == 0 ? reshape(x, {1}) : x, d, repeat_interleave(r));
}

namespace {

// Whether each (row, column) of the last two dims lies on the kept side of `diagonal`.
Tensor triangle_mask(const Tensor& a, int64_t diagonal, bool lower, const char* op) {
  EMBER_CHECK_SHAPE(a.dim() >= 2, op, ": expected a tensor of at least 2 dims, got shape ",
                    a.shape());
  const Device dev = a.device();
  const int64_t m = a.size(-2), n = a.size(-1);
  const Tensor offset = ops::sub(arange(n, {kInt64, dev}).reshape({1, n}),
                                 arange(m, {kInt64, dev}).reshape({m, 1}));  // column - row
  const Tensor k = full({}, static_cast<double>(diagonal), {kInt64, dev});
  return lower ? ops::le(offset, k) : ops::ge(offset, k);
}

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

Tensor tril(const Tensor& a, int64_t diagonal) {
  return where(triangle_mask(a, diagonal, true, "tril"), a, zeros({}, {a.dtype(), a.device()}));
}

Tensor triu(const Tensor& a, int64_t diagonal) {
  return where(triangle_mask(a, diagonal, false, "triu"), a, zeros({}, {a.dtype(), a.device()}));
}

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

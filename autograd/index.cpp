// Indexing (autograd/index.h). The items are resolved once against x's shape into basic steps
// (select/slice/unsqueeze, a view: the forward applies them to x, the backward replays them on
// zeros) and index tensors, each at the dim of that view it indexes; the tensors then read
// (ops::index) or write (ops::index_put_) the view. Backward passes write with the indices the
// forward checked, without checking them again (no wait for the device).
#include "autograd/index.h"

#include "autograd/copy.h"
#include "autograd/elementwise.h"
#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "autograd/inplace.h"
#include "autograd/shape.h"
#include "ops/checks.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/reduce.h"

namespace ember {

int64_t TensorIndex::dims_consumed() const {
  switch (kind_) {
    case Kind::kInteger:
    case Kind::kSlice:
      return 1;
    case Kind::kTensor:  // a mask covers its dims (a 0-d one adds a dim instead)
      return tensor_.dtype() == kBool || tensor_.dtype() == kUInt8 ? tensor_.dim() : 1;
    default:
      return 0;
  }
}

namespace {

using Saved = std::vector<Tensor>;
using Grads = std::vector<Tensor>;

// One basic step on the partial result; `dim` counts in the partial result's dims.
struct Step {
  TensorIndex::Kind kind;
  int64_t dim, start = 0, stop = 0, step = 1;
};

// The items resolved against x: the basic steps, and per dim of the view they make, the index
// tensor that indexes it (undefined where none; a mask already turned into one int64 tensor per
// dim it covers).
struct Resolved {
  std::vector<Step> steps;
  std::vector<Tensor> indices;
  bool advanced() const {
    for (const Tensor& t : indices)
      if (t.defined()) return true;
    return false;
  }
};

Resolved resolve(const Tensor& x, const std::vector<TensorIndex>& items) {
  int64_t consumed = 0, ellipses = 0;
  for (const TensorIndex& it : items) {
    if (it.kind() == TensorIndex::Kind::kEllipsis) ++ellipses;
    consumed += it.dims_consumed();
  }
  EMBER_CHECK_INDEX(ellipses <= 1, "index: an index can only have a single ellipsis ('...')");
  EMBER_CHECK_INDEX(consumed <= x.dim(), "index: too many indices for a tensor of dimension ",
                    x.dim(), " (", consumed, " given)");
  Resolved r;
  std::vector<std::pair<int64_t, Tensor>> tensors;  // (dim of the view, tensor)
  Shape shape = x.shape();  // of the partial result, to check integers and masks against
  int64_t d = 0;
  for (const TensorIndex& it : items) {
    switch (it.kind()) {
      case TensorIndex::Kind::kNewAxis:
        r.steps.push_back({it.kind(), d});
        shape.insert(shape.begin() + d, 1);
        ++d;
        break;
      case TensorIndex::Kind::kEllipsis:
        d += x.dim() - consumed;
        break;
      case TensorIndex::Kind::kSlice: {
        const Slice& s = it.slice();
        EMBER_CHECK_VALUE(s.step > 0, "index: slice step must be greater than zero, got ", s.step);
        const int64_t n = shape[d];
        // Tensor::slice counts negative bounds from the end and clamps them to the dim.
        r.steps.push_back({it.kind(), d, s.start.value_or(0), s.stop.value_or(n), s.step});
        ++d;
        break;
      }
      case TensorIndex::Kind::kInteger: {
        const int64_t i = it.integer(), n = shape[d];
        EMBER_CHECK_INDEX(i >= -n && i < n, "index: index ", i, " is out of bounds for dimension ",
                          d, " with size ", n);
        r.steps.push_back({it.kind(), d, i < 0 ? i + n : i});
        shape.erase(shape.begin() + d);
        break;
      }
      case TensorIndex::Kind::kTensor: {
        Tensor t = it.tensor();
        ops::check_same_device("index", {&x, &t});
        const bool mask = t.dtype() == kBool || t.dtype() == kUInt8;
        EMBER_CHECK_DTYPE(mask || t.dtype() == kInt64 || t.dtype() == kInt32,
                          "index: tensors used as indices must be int64, int32 or bool (a mask), ",
                          "got ", t.dtype());
        if (t.dtype() == kInt32) t = t.to(kInt64);
        if (mask && t.dim() == 0) {
          // x[True] adds a dim of size 1, x[False] one of size 0, as PyTorch.
          r.steps.push_back({TensorIndex::Kind::kNewAxis, d});
          shape.insert(shape.begin() + d, 1);
          if (t.item() == 0.0) {
            r.steps.push_back({TensorIndex::Kind::kSlice, d, 0, 0, 1});
            shape[d] = 0;
          }
          ++d;
          break;
        }
        if (mask) {
          for (int64_t k = 0; k < t.dim(); ++k)
            EMBER_CHECK_INDEX(t.size(k) == shape[d + k], "index: the shape of the mask ",
                              t.shape(), " at index ", d, " does not match the shape of the ",
                              "indexed tensor ", Shape(std::vector<int64_t>(shape.begin() + d,
                                                                         shape.begin() + d +
                                                                             t.dim())),
                              " at that index");
          const Tensor m = t.dtype() == kBool ? t : ops::ne(t, zeros({}, {kUInt8, t.device()}));
          std::vector<Tensor> per_dim = ops::mask_indices(m);
          for (int64_t k = 0; k < t.dim(); ++k) tensors.emplace_back(d + k, per_dim[k]);
        } else {
          tensors.emplace_back(d, t);
        }
        d += it.dims_consumed();
        break;
      }
    }
  }
  if (!tensors.empty()) {
    r.indices.resize(static_cast<size_t>(tensors.back().first) + 1);
    for (auto& [dim, t] : tensors) r.indices[dim] = t;
  }
  return r;
}

Tensor apply(Tensor t, const std::vector<Step>& steps) {
  for (const Step& s : steps) {
    if (s.kind == TensorIndex::Kind::kInteger)
      t = t.select(s.dim, s.start);
    else if (s.kind == TensorIndex::Kind::kSlice)
      t = t.slice(s.dim, s.start, s.stop, s.step);
    else
      t = t.unsqueeze(s.dim);
  }
  return t;
}

// The defined index tensors, which backward nodes save (so that an in-place change to one is
// reported) and then put back in place.
Saved defined_of(const std::vector<Tensor>& indices) {
  Saved s;
  for (const Tensor& t : indices)
    if (t.defined()) s.push_back(t);
  return s;
}
std::vector<Tensor> restore(const std::vector<Tensor>& pattern, const Saved& saved, size_t first) {
  std::vector<Tensor> out(pattern.size());
  for (size_t d = 0, k = first; d < pattern.size(); ++d)
    if (pattern[d].defined()) out[d] = saved[k++];
  return out;
}

// target's region named by r (a view) written with values: assigned, or added when accumulate.
void write(const Tensor& target, const Resolved& r, const Tensor& values, bool accumulate,
           bool check) {
  Tensor view = apply(target, r.steps);
  if (r.advanced()) {
    ops::index_put_(view, r.indices, values.dtype() == view.dtype() ? values : values.to(view.dtype()),
                    accumulate, check);
  } else if (accumulate) {
    view.copy_(ops::add(view, values));
  } else {
    view.copy_(values);
  }
}

Tensor read(const Tensor& source, const Resolved& r, bool check) {
  const Tensor view = apply(source, r.steps);
  return r.advanced() ? ops::index(view, r.indices, check) : view;
}

// Of the values an assignment wrote through r (gv: the output gradient read at each written
// position), only those that were not overwritten by a later position reach the output: the
// others get a zero gradient. The positions are written in the forward's order into a tensor of
// the target's shape and read back; a position whose number survived was the last write.
Tensor last_writes(const Tensor& g, const Resolved& r, const Tensor& gv) {
  const Device dev = g.device();
  const Tensor pos = arange(gv.numel(), {kInt64, dev}).reshape(gv.shape());
  const Tensor winner = full(g.shape(), -1.0, {kInt64, dev});
  write(winner, r, pos, false, false);
  return ops::where(ops::eq(read(winner, r, false), pos), gv, zeros({}, {gv.dtype(), dev}));
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<TensorIndex>& items) {
  const Resolved r = resolve(x, items);
  const std::vector<Step> steps = r.steps;
  const Tensor view = steps.empty()
                          ? x
                          : record_view("SliceBackward", x,
                                        [steps](const Tensor& t) { return apply(t, steps); });
  if (!r.advanced()) return view;
  const std::vector<Tensor> pattern = r.indices;
  const Shape shape = view.shape();
  const TensorOptions opts(view.dtype(), view.device());
  return record("IndexBackward", ops::index(view, r.indices), {view}, defined_of(r.indices),
                [pattern, shape, opts](const Tensor& g, const Saved& s) {
                  Tensor z = zeros(shape, opts);
                  ops::index_put_(z, restore(pattern, s, 0), g, true, false);
                  return Grads{z};
                });
}

Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& items, const Tensor& values,
                 bool accumulate) {
  ops::check_same_device("index_put", {&x, &values});
  const Resolved r = resolve(x, items);
  Tensor out = x.clone();
  write(out, r, values, accumulate, true);
  const Shape vshape = values.shape();
  const DType vtype = values.dtype();
  Saved saved = defined_of(r.indices);
  return record("IndexPutBackward", out, {x, values}, saved,
                [r, vshape, vtype, accumulate](const Tensor& g, const Saved&) {
                  Tensor gx = g, gv = read(g, r, false);
                  if (!accumulate) {
                    gx = g.clone();
                    write(gx, r, zeros({}, {g.dtype(), g.device()}), false, false);
                    gv = last_writes(g, r, gv);
                  }
                  gv = sum_to(gv, vshape);
                  return Grads{gx, gv.dtype() == vtype ? gv : gv.to(vtype)};
                });
}

Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& items, const Tensor& values,
                   bool accumulate) {
  return apply_inplace("index_put_", x, {values}, [&](const Tensor& self) {
    if (!any_requires_grad({self, values})) {
      write(self, resolve(self, items), values, accumulate, true);
      return self;
    }
    return index_put(self, items, values, accumulate);
  });
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const Shape shape = x.shape();
  const TensorOptions opts(x.dtype(), x.device());
  return record("IndexSelectBackward", ops::index_select(x, dim, index), {x}, {index},
                [shape, opts, dim](const Tensor& g, const Saved& s) {
                  Tensor z = zeros(shape, opts);
                  ops::index_add_(z, dim, s[0], g, false);
                  return Grads{z};
                });
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const Shape shape = x.shape();
  const TensorOptions opts(x.dtype(), x.device());
  return record("GatherBackward", ops::gather(x, dim, index), {x}, {index},
                [shape, opts, dim](const Tensor& g, const Saved& s) {
                  Tensor z = zeros(shape, opts);
                  ops::scatter_(z, dim, s[0], g, true, false);
                  return Grads{z};
                });
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  if (!dim) return gather(reshape(x, {x.numel()}), 0, indices.reshape({indices.numel()}));
  const int64_t d = wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), "take_along_dim");
  EMBER_CHECK_SHAPE(x.dim() == indices.dim(), "take_along_dim: x of shape ", x.shape(),
                    " and indices of shape ", indices.shape(), " differ in their number of dims");
  // Both broadcast to one shape outside dim.
  Shape xs = x.shape(), is = indices.shape();
  xs[d] = 1;
  is[d] = 1;
  const Shape b = ops::broadcast_shapes(xs, is, "take_along_dim");
  Shape xb = b, ib = b;
  if (x.dim() > 0) xb[d] = x.size(d), ib[d] = indices.size(d);
  return gather(expand(x, xb), d, indices.expand(ib));
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  ops::check_same_device("masked_select", {&x, &mask});
  EMBER_CHECK_DTYPE(mask.dtype() == kBool, "masked_select: expected a bool mask, got ",
                    mask.dtype());
  const Shape shape = ops::broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  return index(expand(x, shape), {mask.expand(shape)});
}

namespace {

// The gradient of a scatter's src: g read at the index's positions, zero where src is larger
// than the index.
Tensor scatter_src_grad(const Tensor& g, int64_t dim, const Tensor& index, const Shape& src_shape) {
  Tensor read = ops::gather(g, dim, index, false);
  if (index.shape() == src_shape) return read;
  Tensor gs = zeros(src_shape, {g.dtype(), g.device()});
  gs.as_strided(index.shape(), gs.strides(), gs.offset()).copy_(read);
  return gs;
}

}  // namespace

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.clone();
  ops::scatter_(out, dim, index, src, false);
  const Shape sshape = src.shape();
  return record("ScatterBackward", out, {x, src}, {index},
                [dim, sshape](const Tensor& g, const Saved& s) {
                  Tensor gx = g.clone();
                  ops::scatter_(gx, dim, s[0], zeros({}, {g.dtype(), g.device()}).expand(s[0].shape()),
                                false, false);
                  return Grads{gx, scatter_src_grad(g, dim, s[0], sshape)};
                });
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value) {
  return scatter(x, dim, index, full({}, value, {x.dtype(), x.device()}).expand(index.shape()));
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = x.clone();
  ops::scatter_(out, dim, index, src, true);
  const Shape sshape = src.shape();
  return record("ScatterAddBackward", out, {x, src}, {index},
                [dim, sshape](const Tensor& g, const Saved& s) {
                  return Grads{g, scatter_src_grad(g, dim, s[0], sshape)};
                });
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 double alpha) {
  Tensor out = x.clone();
  ops::index_add_(out, dim, index, alpha == 1.0 ? src : ops::mul(src, alpha));
  return record("IndexAddBackward", out, {x, src}, {index},
                [dim, alpha](const Tensor& g, const Saved& s) {
                  Tensor gs = ops::index_select(g, dim, s[0], false);
                  return Grads{g, alpha == 1.0 ? gs : ops::mul(gs, alpha)};
                });
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  EMBER_CHECK_DTYPE(mask.dtype() == kBool, "masked_fill: expected a bool mask, got ",
                    mask.dtype());
  EMBER_CHECK_SHAPE(value.dim() == 0, "masked_fill: expected a 0-d value tensor, got shape ",
                    value.shape());
  EMBER_CHECK_SHAPE(ops::broadcast_shapes(mask.shape(), x.shape(), "masked_fill") == x.shape(),
                    "masked_fill: a mask of shape ", mask.shape(),
                    " does not broadcast to the tensor's shape ", x.shape());
  const Tensor v = value.dtype() == x.dtype() ? value : to(value, x.dtype());
  return where(mask, v, x);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return masked_fill(x, mask, full({}, value, {x.dtype(), x.device()}));
}

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx,
                 bool scale_grad_by_freq) {
  ops::check_same_device("embedding", {&input, &weight});
  EMBER_CHECK_SHAPE(weight.dim() == 2, "embedding: expected a 2-D weight [num_embeddings, ",
                    "embedding_dim], got shape ", weight.shape());
  EMBER_CHECK_DTYPE(input.dtype() == kInt64 || input.dtype() == kInt32,
                    "embedding: expected integer indices (int64 or int32), got ", input.dtype());
  const int64_t num = weight.size(0);
  std::optional<int64_t> pad = padding_idx;
  if (pad) {
    EMBER_CHECK_INDEX(*pad >= -num && *pad < num, "embedding: padding_idx ", *pad,
                      " is out of range for ", num, " embeddings");
    if (*pad < 0) *pad += num;
  }
  const Tensor flat = (input.dtype() == kInt64 ? input : input.to(kInt64)).reshape({input.numel()});
  Shape shape = input.shape();
  shape.push_back(weight.size(1));
  const Tensor rows = ops::index_select(weight, 0, flat).reshape(shape);
  const Shape wshape = weight.shape();
  const TensorOptions opts(weight.dtype(), weight.device());
  return record("EmbeddingBackward", rows, {weight}, {flat},
                [wshape, opts, pad, scale_grad_by_freq](const Tensor& g, const Saved& s) {
                  Tensor gr = g.reshape({s[0].numel(), wshape[1]});
                  if (scale_grad_by_freq) {
                    // Each row's gradient over the count of its index.
                    Tensor count = zeros({wshape[0]}, {kInt64, opts.device});
                    ops::index_add_(count, 0, s[0], ones({s[0].numel()}, {kInt64, opts.device}),
                                    false);
                    const Tensor freq = ops::index_select(count, 0, s[0], false).to(g.dtype());
                    gr = ops::div(gr, freq.reshape({freq.numel(), 1}));
                  }
                  Tensor z = zeros(wshape, opts);
                  ops::index_add_(z, 0, s[0], gr.contiguous(), false);
                  if (pad) z.select(0, *pad).zero_();
                  return Grads{z};
                });
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  EMBER_CHECK_DTYPE(x.dtype() == kInt64, "one_hot: expected an int64 tensor of class indices, ",
                    "got ", x.dtype());
  const Device dev = x.device();
  if (x.numel() > 0) {
    // One wait: the smallest and largest index, for the check and the default class count.
    Tensor both = empty({2}, {kInt64, dev});
    both.select(0, 0).copy_(ops::amin(x));
    both.select(0, 1).copy_(ops::amax(x));
    const std::vector<int64_t> range = both.to_vector<int64_t>();
    EMBER_CHECK_VALUE(range[0] >= 0, "one_hot: class values must be non-negative, got ", range[0]);
    if (num_classes < 0) num_classes = range[1] + 1;
    EMBER_CHECK_VALUE(range[1] < num_classes, "one_hot: class value ", range[1],
                      " is out of range for ", num_classes, " classes");
  }
  EMBER_CHECK_VALUE(num_classes >= 0, "one_hot: cannot infer the number of classes of an empty "
                    "tensor; pass num_classes");
  Shape shape = x.shape();
  shape.push_back(num_classes);
  const Tensor classes = arange(num_classes, {kInt64, dev});
  return ops::eq(x.unsqueeze(x.dim()), classes).to(kInt64).reshape(shape);
}

}  // namespace ember

// In-place ops under autograd (Note [In-place ops] in autograd/inplace.h).
#include "autograd/inplace.h"

#include "autograd/copy.h"
#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "autograd/leaf.h"
#include "autograd/shape.h"

namespace ember {
namespace {

// Where a view sits in its base's memory, to find the same region in a base-shaped gradient.
struct Region {
  Shape shape, strides;
  int64_t offset;
  Tensor in(const Tensor& t) const { return t.as_strided(shape, strides, t.offset() + offset); }
};

// The base's new history: gradient of the region to the written values, the rest to the old
// base (PyTorch's CopySlices).
std::shared_ptr<FunctionNode> copy_slices(const Tensor& base, const Tensor& values,
                                          const Region& region) {
  auto node = std::make_shared<FunctionNode>(
      "CopySlices",
      [region](const Tensor& g, const std::vector<Tensor>&) {
        Tensor gb = g.contiguous().clone();
        region.in(gb).zero_();
        return std::vector<Tensor>{gb, region.in(g.contiguous()).contiguous()};
      },
      std::vector<Tensor>{});
  node->next_edges = {gradient_edge(base), gradient_edge(values)};
  node->output_meta.push_back({base.shape(), base.dtype(), base.device()});
  return node;
}

// x's history as the region of its (rebased) base.
std::shared_ptr<FunctionNode> view_of_base(const Tensor& base, const Region& region) {
  const Shape shape = base.shape();
  const TensorOptions opts(base.dtype(), base.device());
  auto node = std::make_shared<FunctionNode>(
      "AsStridedBackward",
      [region, shape, opts](const Tensor& g, const std::vector<Tensor>&) {
        Tensor z = zeros(shape, opts);
        region.in(z).copy_(g);
        return std::vector<Tensor>{z};
      },
      std::vector<Tensor>{});
  node->next_edges = {gradient_edge(base)};
  node->output_meta.push_back({region.shape, base.dtype(), base.device()});
  return node;
}

// Whether r's node takes the snapshot's gradient directly (add_, mul_, masked_fill_, x[i] = v
// do); a deeper dependence is not looked for, and costs only a node that adds zero.
bool reads(const Tensor& r, const Tensor& snapshot) {
  const AutogradMeta* rm = autograd_meta_if(r);
  const AutogradMeta* sm = autograd_meta_if(snapshot);
  if (!rm || !rm->grad_fn || !sm || !sm->grad_fn) return false;
  for (const Edge& e : rm->grad_fn->next_edges)
    if (e.fn == sm->grad_fn) return true;
  return false;
}

void set_history(const Tensor& t, std::shared_ptr<Node> fn, uint32_t output_nr) {
  AutogradMeta& m = autograd_meta(t);
  m.grad_fn = std::move(fn);
  m.output_nr = output_nr;
}

}  // namespace

Tensor& apply_inplace(const char* op, Tensor& x, const std::vector<Tensor>& others,
                      const std::function<Tensor(const Tensor&)>& f) {
  auto check_result = [&](const Tensor& r) {
    EMBER_CHECK_SHAPE(r.dim() <= x.dim() && r.expand(x.shape()).shape() == x.shape(), op,
                      ": the result of shape ", r.shape(), " does not broadcast to the shape ",
                      x.shape(), " of the tensor written in place");
    EMBER_CHECK_DTYPE(promote_types(x.dtype(), r.dtype()) == x.dtype(), op, ": the result of dtype ",
                      r.dtype(), " cannot be stored in place in a ", x.dtype(), " tensor");
  };
  std::vector<Tensor> inputs = others;
  inputs.push_back(x);
  if (!any_requires_grad(inputs)) {
    Tensor r;
    {
      NoGradGuard no_grad;
      r = f(x);
    }
    check_result(r);
    if (!r.is_same(x)) x.copy_(r);
    return x;
  }
  EMBER_CHECK_VALUE(!(is_leaf(x) && x.requires_grad()), op,
                    ": a leaf tensor that requires grad is being used in an in-place operation; "
                    "wrap it in `no_grad()` or write to a copy (clone())");
  const std::shared_ptr<TensorImpl> base_impl = x.impl()->base;
  Tensor base = base_impl ? Tensor(base_impl) : Tensor();
  if (base.defined()) {
    EMBER_CHECK_VALUE(!(is_leaf(base) && base.requires_grad()), op,
                      ": a view of a leaf tensor that requires grad is being used in an in-place "
                      "operation; write to a copy (clone()) instead");
    EMBER_CHECK_VALUE(base.is_contiguous(), op, ": an in-place write through a view of a ",
                      "non-contiguous tensor of shape ", base.shape(), " cannot be differentiated; "
                      "write to a contiguous copy");
  }
  const Tensor snapshot = x.requires_grad() ? clone(x) : detach(x).clone();
  Tensor r = f(snapshot);
  check_result(r);
  // A write whose values do not come from x (fill_, zero_, copy_) keeps x's old history in the
  // graph, with a zero gradient for what it overwrote, as PyTorch does.
  if (snapshot.requires_grad() && !reads(r, snapshot))
    r = record("CopyBackwards", r.as_strided(r.shape(), r.strides(), r.offset()), {snapshot, r},
               {}, [](const Tensor& g, const std::vector<Tensor>&) {
                 return std::vector<Tensor>{zeros_like(g), g};
               });
  if (r.dtype() != x.dtype()) r = to(r, x.dtype());
  if (r.shape() != x.shape()) r = expand(r, x.shape());
  {
    NoGradGuard no_grad;
    x.copy_(r);
  }
  if (!base.defined()) {
    AutogradMeta* rm = autograd_meta_if(r);
    set_history(x, rm ? rm->grad_fn : nullptr, rm ? rm->output_nr : 0);
    return x;
  }
  const Region region{x.shape(), x.strides(), x.offset() - base.offset()};
  set_history(base, copy_slices(base, r, region), 0);
  set_history(x, view_of_base(base, region), 0);
  return x;
}

}  // namespace ember

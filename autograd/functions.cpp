#include "autograd/functions.h"

#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace ember {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

Tensor& requires_grad_(Tensor& t, bool requires) {
  AutogradMeta* existing = autograd_meta_if(t);
  EMBER_CHECK_VALUE(!(existing && existing->grad_fn), "requires_grad_: only leaf tensors can be "
                    "marked; this one was computed by ", existing ? existing->grad_fn->name() : "",
                    " (use detach() to make a leaf)");
  EMBER_CHECK_DTYPE(!requires || is_floating(t.dtype()),
                    "requires_grad_: only floating-point tensors can require grad, got ",
                    t.dtype());
  autograd_meta(t).requires_grad_ = requires;
  return t;
}

Tensor grad(const Tensor& t) {
  AutogradMeta* m = autograd_meta_if(t);
  return m ? m->grad : Tensor();
}

void zero_grad(Tensor& t) {
  if (AutogradMeta* m = autograd_meta_if(t)) m->grad = Tensor();
}

bool is_leaf(const Tensor& t) {
  AutogradMeta* m = autograd_meta_if(t);
  return !m || !m->grad_fn;
}

// --- Elementwise --------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  Shape sa = a.shape(), sb = b.shape();
  return record("AddBackward", ops::add(a, b), {a, b}, {}, [sa, sb](const Tensor& g, const Saved&) {
    return Grads{sum_to(g, sa), sum_to(g, sb)};
  });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Shape sa = a.shape(), sb = b.shape();
  return record("SubBackward", ops::sub(a, b), {a, b}, {}, [sa, sb](const Tensor& g, const Saved&) {
    return Grads{sum_to(g, sa), sum_to(ops::neg(g), sb)};
  });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  return record("MulBackward", ops::mul(a, b), {a, b}, {a, b}, [](const Tensor& g, const Saved& s) {
    return Grads{sum_to(ops::mul(g, s[1]), s[0].shape()), sum_to(ops::mul(g, s[0]), s[1].shape())};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  return record("DivBackward", ops::div(a, b), {a, b}, {a, b}, [](const Tensor& g, const Saved& s) {
    Tensor ga = ops::div(g, s[1]);
    Tensor gb = ops::neg(ops::div(ops::mul(ga, s[0]), s[1]));
    return Grads{sum_to(ga, s[0].shape()), sum_to(gb, s[1].shape())};
  });
}

Tensor add(const Tensor& a, double b) {
  return record("AddBackward", ops::add(a, b), {a}, {}, [](const Tensor& g, const Saved&) {
    return Grads{g};
  });
}

Tensor mul(const Tensor& a, double b) {
  return record("MulBackward", ops::mul(a, b), {a}, {}, [b](const Tensor& g, const Saved&) {
    return Grads{ops::mul(g, b)};
  });
}

Tensor neg(const Tensor& a) {
  return record("NegBackward", ops::neg(a), {a}, {}, [](const Tensor& g, const Saved&) {
    return Grads{ops::neg(g)};
  });
}

Tensor exp(const Tensor& a) {
  Tensor out = ops::exp(a);
  return record("ExpBackward", out, {a}, {out}, [](const Tensor& g, const Saved& s) {
    return Grads{ops::mul(g, s[0])};
  });
}

Tensor log(const Tensor& a) {
  return record("LogBackward", ops::log(a), {a}, {a}, [](const Tensor& g, const Saved& s) {
    return Grads{ops::div(g, s[0])};
  });
}

Tensor sqrt(const Tensor& a) {
  Tensor out = ops::sqrt(a);
  return record("SqrtBackward", out, {a}, {out}, [](const Tensor& g, const Saved& s) {
    return Grads{ops::div(ops::mul(g, 0.5), s[0])};
  });
}

Tensor abs(const Tensor& a) {
  return record("AbsBackward", ops::abs(a), {a}, {a}, [](const Tensor& g, const Saved& s) {
    // sign(a), with sign(0) = 0 as in PyTorch.
    Tensor zero = zeros({}, {s[0].dtype(), s[0].device()});
    Tensor sign = ops::sub(ops::gt(s[0], zero).to(g.dtype()), ops::lt(s[0], zero).to(g.dtype()));
    return Grads{ops::mul(g, sign)};
  });
}

Tensor pow(const Tensor& a, double p) {
  return record("PowBackward", ops::pow(a, p), {a}, {a}, [p](const Tensor& g, const Saved& s) {
    if (p == 0.0) return Grads{zeros_like(g)};
    return Grads{ops::mul(ops::mul(g, ops::pow(s[0], p - 1.0)), p)};
  });
}

Tensor clamp(const Tensor& a, double lo, double hi) {
  return record("ClampBackward", ops::clamp(a, lo, hi), {a}, {a},
                [lo, hi](const Tensor& g, const Saved& s) {
                  // Gradient passes where lo <= a <= hi (PyTorch's convention at the bounds).
                  Tensor lo_t = full({}, lo, {s[0].dtype(), s[0].device()});
                  Tensor hi_t = full({}, hi, {s[0].dtype(), s[0].device()});
                  Tensor inside = ops::mul(ops::ge(s[0], lo_t).to(g.dtype()),
                                           ops::le(s[0], hi_t).to(g.dtype()));
                  return Grads{ops::mul(g, inside)};
                });
}

namespace {
// Gradient of maximum/minimum: to the selected input; split evenly on ties (as PyTorch).
Grads select_grads(const Tensor& g, const Tensor& a, const Tensor& b, bool is_max) {
  Tensor pick_a = (is_max ? ops::gt(a, b) : ops::lt(a, b)).to(g.dtype());
  Tensor tie = ops::eq(a, b).to(g.dtype());
  Tensor wa = ops::add(pick_a, ops::mul(tie, 0.5));
  Tensor wb = ops::sub(ops::sub(ones({}, {g.dtype(), g.device()}), pick_a), ops::mul(tie, 0.5));
  return Grads{sum_to(ops::mul(g, wa), a.shape()), sum_to(ops::mul(g, wb), b.shape())};
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) {
  return record("MaximumBackward", ops::maximum(a, b), {a, b}, {a, b},
                [](const Tensor& g, const Saved& s) { return select_grads(g, s[0], s[1], true); });
}

Tensor minimum(const Tensor& a, const Tensor& b) {
  return record("MinimumBackward", ops::minimum(a, b), {a, b}, {a, b},
                [](const Tensor& g, const Saved& s) { return select_grads(g, s[0], s[1], false); });
}

// --- Reductions -----------------------------------------------------------------------------------

namespace {
// The gradient of a reduction, reshaped with the reduced dims kept and expanded to `shape`.
Tensor expand_reduced(const Tensor& g, const Shape& shape, std::vector<int64_t> dims, bool keepdim) {
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
  return record("MeanBackward", out, {a}, {}, [shape, dims, keepdim, count](const Tensor& g, const Saved&) {
    return Grads{expand_reduced(ops::mul(g, 1.0 / count), shape, dims, keepdim)};
  });
}

// --- Products and shapes ----------------------------------------------------------------------------

Tensor reshape(const Tensor& a, const Shape& shape) {
  Shape from = a.shape();
  return record("ReshapeBackward", a.reshape(shape), {a}, {}, [from](const Tensor& g, const Saved&) {
    return Grads{g.reshape(from)};
  });
}

Tensor transpose(const Tensor& a, int64_t d0, int64_t d1) {
  return record("TransposeBackward", a.transpose(d0, d1), {a}, {},
                [d0, d1](const Tensor& g, const Saved&) { return Grads{g.transpose(d0, d1)}; });
}

Tensor permute(const Tensor& a, const std::vector<int64_t>& dims) {
  std::vector<int64_t> inverse(dims.size());
  Tensor out = a.permute(dims);  // validates dims
  for (size_t i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], a.dim(), "permute")] = static_cast<int64_t>(i);
  return record("PermuteBackward", out, {a}, {},
                [inverse](const Tensor& g, const Saved&) { return Grads{g.permute(inverse)}; });
}

namespace {
// matmul of operands with at least 2 dims each (batch dims broadcast).
Tensor matmul_nd(const Tensor& a, const Tensor& b) {
  return record("MatmulBackward", ops::matmul(a, b), {a, b}, {a, b},
                [](const Tensor& g, const Saved& s) {
                  Tensor ga = ops::matmul(g, s[1].transpose(-1, -2));
                  Tensor gb = ops::matmul(s[0].transpose(-1, -2), g);
                  return Grads{sum_to(ga, s[0].shape()), sum_to(gb, s[1].shape())};
                });
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  EMBER_CHECK_SHAPE(a.dim() >= 1 && b.dim() >= 1, "matmul: both operands need at least 1 dim, got ",
                    a.shape(), " and ", b.shape());
  // 1-D operands become a row (left) or a column (right), and the added dim is removed after.
  Tensor a2 = a.dim() == 1 ? reshape(a, {1, a.shape()[0]}) : a;
  Tensor b2 = b.dim() == 1 ? reshape(b, {b.shape()[0], 1}) : b;
  Tensor out = matmul_nd(a2, b2);
  if (a.dim() == 1 && b.dim() == 1) return reshape(out, {});
  if (a.dim() == 1) {
    Shape s(out.shape().begin(), out.shape().end());
    s.erase(s.end() - 2);
    return reshape(out, s);
  }
  if (b.dim() == 1) {
    Shape s(out.shape().begin(), out.shape().end() - 1);
    return reshape(out, s);
  }
  return out;
}

// --- Operators ------------------------------------------------------------------------------------

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return add(a, -b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, double b) { return mul(a, 1.0 / b); }

}  // namespace ember

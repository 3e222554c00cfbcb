// Differentiable elementwise arithmetic (autograd/elementwise.h): each forward is the ops/
// function, each backward a few elementwise ops summed back to the inputs' shapes.
#include "autograd/elementwise.h"

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "ops/elementwise.h"

namespace ember {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {
// A gradient summed back to an input's shape and converted to its dtype (a float32 input of a
// float64 result gets a float32 gradient, as in PyTorch).
Tensor grad_for(const Tensor& g, const Shape& shape, DType t) {
  Tensor r = sum_to(g, shape);
  return r.dtype() == t ? r : r.to(t);
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  const Shape sa = a.shape(), sb = b.shape();
  const DType ta = a.dtype(), tb = b.dtype();
  return record("AddBackward", ops::add(a, b), {a, b}, {},
                [sa, sb, ta, tb](const Tensor& g, const Saved&) {
                  return Grads{grad_for(g, sa, ta), grad_for(g, sb, tb)};
                });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  const Shape sa = a.shape(), sb = b.shape();
  const DType ta = a.dtype(), tb = b.dtype();
  return record("SubBackward", ops::sub(a, b), {a, b}, {},
                [sa, sb, ta, tb](const Tensor& g, const Saved&) {
                  return Grads{grad_for(g, sa, ta), grad_for(ops::neg(g), sb, tb)};
                });
}

// Note [Saving what the backward needs]: a product saves each operand only for the other's
// gradient, so an operand that needs none saves nothing, as in PyTorch; writing in place into a
// tensor that was only multiplied by a constant is then no error.
Tensor mul(const Tensor& a, const Tensor& b) {
  const Shape sa = a.shape(), sb = b.shape();
  const DType ta = a.dtype(), tb = b.dtype();
  return record("MulBackward", ops::mul(a, b), {a, b},
                {b.requires_grad() ? a : Tensor(), a.requires_grad() ? b : Tensor()},
                [sa, sb, ta, tb](const Tensor& g, const Saved& s) {
                  return Grads{s[1].defined() ? grad_for(ops::mul(g, s[1]), sa, ta) : Tensor(),
                               s[0].defined() ? grad_for(ops::mul(g, s[0]), sb, tb) : Tensor()};
                });
}

Tensor div(const Tensor& a, const Tensor& b) {
  const Shape sa = a.shape(), sb = b.shape();
  const DType ta = a.dtype(), tb = b.dtype();
  return record("DivBackward", ops::div(a, b), {a, b}, {b.requires_grad() ? a : Tensor(), b},
                [sa, sb, ta, tb](const Tensor& g, const Saved& s) {
                  Tensor ga = ops::div(g, s[1]);
                  Tensor gb = s[0].defined() ? grad_for(ops::neg(ops::div(ops::mul(ga, s[0]), s[1])),
                                                        sb, tb)
                                             : Tensor();
                  return Grads{grad_for(ga, sa, ta), gb};
                });
}

Tensor add(const Tensor& a, double b) {
  return record("AddBackward", ops::add(a, b), {a}, {},
                [](const Tensor& g, const Saved&) { return Grads{g}; });
}

Tensor mul(const Tensor& a, double b) {
  return record("MulBackward", ops::mul(a, b), {a}, {},
                [b](const Tensor& g, const Saved&) { return Grads{ops::mul(g, b)}; });
}

Tensor neg(const Tensor& a) {
  return record("NegBackward", ops::neg(a), {a}, {},
                [](const Tensor& g, const Saved&) { return Grads{ops::neg(g)}; });
}

Tensor exp(const Tensor& a) {
  if (autocast_applies({&a}))
    return autocast_call("exp", {a}, [&](const auto& c) { return exp(c[0]); });
  Tensor out = ops::exp(a);
  return record("ExpBackward", out, {a}, {out},
                [](const Tensor& g, const Saved& s) { return Grads{ops::mul(g, s[0])}; });
}

Tensor log(const Tensor& a) {
  if (autocast_applies({&a}))
    return autocast_call("log", {a}, [&](const auto& c) { return log(c[0]); });
  return record("LogBackward", ops::log(a), {a}, {a},
                [](const Tensor& g, const Saved& s) { return Grads{ops::div(g, s[0])}; });
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
  if (autocast_applies({&a}))
    return autocast_call("pow", {a}, [&](const auto& c) { return pow(c[0], p); });
  return record("PowBackward", ops::pow(a, p), {a}, {a}, [p](const Tensor& g, const Saved& s) {
    if (p == 0.0) return Grads{zeros_like(g)};
    return Grads{ops::mul(ops::mul(g, ops::pow(s[0], p - 1.0)), p)};
  });
}

Tensor clamp(const Tensor& a, double lo, double hi) {
  return record(
      "ClampBackward", ops::clamp(a, lo, hi), {a}, {a}, [lo, hi](const Tensor& g, const Saved& s) {
        // Gradient passes where lo <= a <= hi (PyTorch's convention at the bounds).
        Tensor lo_t = full({}, lo, {s[0].dtype(), s[0].device()});
        Tensor hi_t = full({}, hi, {s[0].dtype(), s[0].device()});
        Tensor inside =
            ops::mul(ops::ge(s[0], lo_t).to(g.dtype()), ops::le(s[0], hi_t).to(g.dtype()));
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

Tensor pow(const Tensor& a, const Tensor& b) {
  if (autocast_applies({&a, &b}))
    return autocast_call("pow", {a, b}, [&](const auto& c) { return pow(c[0], c[1]); });
  Shape sa = a.shape(), sb = b.shape();
  DType ta = a.dtype(), tb = b.dtype();
  Tensor out = ops::pow(a, b);
  return record("PowBackward", out, {a, b}, {a, b, out},
                [sa, sb, ta, tb](const Tensor& g, const Saved& s) {
                  // s = {a, b, out}: d/da = b * a^(b-1), d/db = out * log(a).
                  Tensor ga = ops::mul(g, ops::mul(s[1], ops::pow(s[0], ops::add(s[1], -1.0))));
                  Tensor gb = ops::mul(g, ops::mul(s[2], ops::log(s[0])));
                  return Grads{sum_to(ga, sa).to(ta), sum_to(gb, sb).to(tb)};
                });
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  EMBER_CHECK_DTYPE(cond.dtype() == kBool, "where: condition must be a bool tensor, got ",
                    cond.dtype());
  Shape sa = a.shape(), sb = b.shape();
  DType ta = a.dtype(), tb = b.dtype();
  return record("WhereBackward", ops::where(cond, a, b), {a, b}, {cond},
                [sa, sb, ta, tb](const Tensor& g, const Saved& s) {
                  Tensor zero = zeros({}, TensorOptions(g.dtype(), g.device()));
                  Tensor ga = sum_to(ops::where(s[0], g, zero), sa).to(ta);
                  Tensor gb = sum_to(ops::where(s[0], zero, g), sb).to(tb);
                  return Grads{ga, gb};
                });
}

// --- Comparisons
// ------------------------------------------------------------------------------------

Tensor eq(const Tensor& a, const Tensor& b) {
  return ops::eq(a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return ops::ne(a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return ops::lt(a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return ops::le(a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return ops::gt(a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return ops::ge(a, b);
}

// --- Operators
// ------------------------------------------------------------------------------------

Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator-(const Tensor& a) {
  return neg(a);
}
Tensor operator+(const Tensor& a, double b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, double b) {
  return add(a, -b);
}
Tensor operator*(const Tensor& a, double b) {
  return mul(a, b);
}
Tensor operator*(double a, const Tensor& b) {
  return mul(b, a);
}
Tensor operator/(const Tensor& a, double b) {
  return mul(a, 1.0 / b);
}

}  // namespace ember

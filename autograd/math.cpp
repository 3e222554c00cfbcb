// More differentiable maths (autograd/math.h): kernels from ops/ where the op is one, recorded
// with its derivative; compositions of differentiable functions where the op is a formula.
#include "autograd/math.h"

#include <cmath>
#include <limits>

#include "autograd/elementwise.h"
#include "autograd/function.h"
#include "autograd/matmul.h"
#include "autograd/reduce.h"
#include "autograd/shape.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ember {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

Tensor scalar_like(const Tensor& t, double v) {
  return full({}, v, {t.dtype(), t.device()});
}

// Piecewise-constant functions: PyTorch defines their gradient as zero everywhere.
Tensor zero_grad_op(const char* name, Tensor out, const Tensor& a) {
  return record(name, std::move(out), {a}, {},
                [](const Tensor& g, const Saved&) { return Grads{zeros_like(g)}; });
}

}  // namespace

Tensor sign(const Tensor& a) {
  return zero_grad_op("SignBackward", ops::sign(a), a);
}
Tensor floor(const Tensor& a) {
  return zero_grad_op("FloorBackward", ops::floor(a), a);
}
Tensor ceil(const Tensor& a) {
  return zero_grad_op("CeilBackward", ops::ceil(a), a);
}
Tensor trunc(const Tensor& a) {
  return zero_grad_op("TruncBackward", ops::trunc(a), a);
}
Tensor round(const Tensor& a, int64_t decimals) {
  if (decimals == 0) return zero_grad_op("RoundBackward", ops::round(a), a);
  const double scale = std::pow(10.0, static_cast<double>(std::abs(decimals)));
  const Tensor s = scalar_like(a, scale);
  const Tensor r = decimals > 0 ? ops::div(ops::round(ops::mul(a, s)), s)
                                : ops::mul(ops::round(ops::div(a, s)), s);
  return zero_grad_op("RoundBackward", r, a);
}

Tensor sin(const Tensor& a) {
  return record("SinBackward", ops::sin(a), {a}, {a}, [](const Tensor& g, const Saved& s) {
    return Grads{ops::mul(g, ops::cos(s[0]))};
  });
}

Tensor cos(const Tensor& a) {
  return record("CosBackward", ops::cos(a), {a}, {a}, [](const Tensor& g, const Saved& s) {
    return Grads{ops::neg(ops::mul(g, ops::sin(s[0])))};
  });
}

Tensor erf(const Tensor& a) {
  return record("ErfBackward", ops::erf(a), {a}, {a}, [](const Tensor& g, const Saved& s) {
    // d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2)
    const Tensor e = ops::exp(ops::neg(ops::mul(s[0], s[0])));
    return Grads{ops::mul(ops::mul(g, e), 2.0 / std::sqrt(M_PI))};
  });
}

namespace {

// fmod/remainder: d/da = 1, d/db = -q where q is the quotient rounded the op's way.
Tensor division_remainder(const char* name, bool floored, const Tensor& a, const Tensor& b) {
  const Tensor out = floored ? ops::remainder(a, b) : ops::fmod(a, b);
  const Shape sa = a.shape(), sb = b.shape();
  return record(name, out, {a, b}, {a, b}, [floored, sa, sb](const Tensor& g, const Saved& s) {
    const Tensor q = ops::div(s[0], s[1]);
    const Tensor whole = floored ? ops::floor(q) : ops::trunc(q);
    return Grads{sum_to(g, sa), sum_to(ops::neg(ops::mul(g, whole)), sb)};
  });
}

}  // namespace

Tensor fmod(const Tensor& a, const Tensor& b) {
  return division_remainder("FmodBackward", false, a, b);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  return division_remainder("RemainderBackward", true, a, b);
}

Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& weight) {
  // PyTorch's two-sided form: exact at weight 0 and weight 1.
  const Tensor diff = sub(b, a);
  const Tensor low = add(a, mul(weight, diff));
  const Tensor high = sub(b, mul(diff, sub(scalar_like(weight, 1.0), weight)));
  return where(ops::lt(weight, scalar_like(weight, 0.5)), low, high);
}

Tensor lerp(const Tensor& a, const Tensor& b, double weight) {
  return lerp(a, b, full({}, weight, {a.dtype(), a.device()}));
}

Tensor isnan(const Tensor& a) {
  if (!is_floating(a.dtype())) return zeros(a.shape(), {kBool, a.device()});
  return ops::ne(a, a);
}
Tensor isinf(const Tensor& a) {
  if (!is_floating(a.dtype())) return zeros(a.shape(), {kBool, a.device()});
  return ops::eq(ops::abs(a), scalar_like(a, std::numeric_limits<double>::infinity()));
}
Tensor isfinite(const Tensor& a) {
  if (!is_floating(a.dtype())) return ones(a.shape(), {kBool, a.device()});
  // a - a is 0 for finite a and NaN for infinities and NaN.
  return ops::eq(ops::sub(a, a), scalar_like(a, 0.0));
}
namespace {

// a != 0 as bool; bool tensors compare as int32, which every device's kernels implement.
Tensor nonzero_flags(const Tensor& a, bool negate) {
  const Tensor x = a.dtype() == kBool || a.dtype() == kUInt8 ? a.to(kInt32) : a;
  const Tensor zero = zeros({}, {x.dtype(), x.device()});
  return negate ? ops::eq(x, zero) : ops::ne(x, zero);
}

}  // namespace

Tensor logical_not(const Tensor& a) {
  return nonzero_flags(a, true);
}

Tensor any(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  const Tensor count = ops::sum(nonzero_flags(a, false).to(kInt32), dims, keepdim);
  return ops::gt(count, zeros({}, {kInt64, a.device()}));
}
Tensor all(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  const Tensor count = ops::sum(nonzero_flags(a, true).to(kInt32), dims, keepdim);
  return ops::eq(count, zeros({}, {kInt64, a.device()}));
}

Tensor logsumexp(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  EMBER_CHECK_DTYPE(is_floating(a.dtype()), "logsumexp: expected a floating tensor, got ",
                    a.dtype());
  // The maximum (not differentiated: its gradient cancels), 0 where it is infinite.
  const Tensor m = ops::amax(a, dims, true);
  const Tensor shift = ops::where(isfinite(m), m, scalar_like(m, 0.0));
  const Tensor r = add(log(sum(exp(sub(a, shift)), dims, true)), shift);
  if (keepdim) return r;
  std::vector<int64_t> all_dims = dims;
  if (all_dims.empty())
    for (int64_t d = 0; d < a.dim(); ++d) all_dims.push_back(d);
  Shape out;
  std::vector<bool> reduced(static_cast<size_t>(a.dim()), false);
  for (int64_t d : all_dims) reduced[wrap_dim(d, std::max<int64_t>(a.dim(), 1), "logsumexp")] = true;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (!reduced[d]) out.push_back(a.size(d));
  return reshape(r, out);
}

Tensor vector_norm(const Tensor& a, double ord, const std::vector<int64_t>& dims, bool keepdim) {
  EMBER_CHECK_DTYPE(is_floating(a.dtype()), "vector_norm: expected a floating tensor, got ",
                    a.dtype());
  const Tensor x = ops::abs(a);
  const double inf = std::numeric_limits<double>::infinity();
  Tensor n;  // keepdim-shaped
  if (ord == inf)
    n = ops::amax(x, dims, true);
  else if (ord == -inf)
    n = ops::amin(x, dims, true);
  else if (ord == 0.0)
    n = ops::sum(ops::ne(x, scalar_like(x, 0.0)), dims, true).to(a.dtype());
  else if (ord == 1.0)
    n = ops::sum(x, dims, true);
  else if (ord == 2.0)
    n = ops::sqrt(ops::sum(ops::mul(x, x), dims, true));
  else
    n = ops::pow(ops::sum(ops::pow(x, ord), dims, true), 1.0 / ord);
  const Shape kept = n.shape();
  Shape out;
  for (int64_t d = 0; d < a.dim(); ++d) {
    bool reduced = dims.empty();
    for (int64_t r : dims) reduced |= wrap_dim(r, a.dim(), "vector_norm") == d;
    if (!reduced || keepdim) out.push_back(kept[d]);
  }
  const Tensor result = n.reshape(out);
  return record("NormBackward", result, {a}, {a, n}, [ord, kept](const Tensor& g_in, const Saved& s) {
    const Tensor& x = s[0];
    const Tensor& norm = s[1];
    const Tensor g = g_in.reshape(kept);
    const Tensor zero = scalar_like(norm, 0.0);
    const Tensor sgn = ops::sign(x);
    Tensor ga;
    if (ord == 0.0) {
      ga = zeros_like(x);
    } else if (std::isinf(ord)) {
      // Split evenly among the elements that reach the extreme, as PyTorch.
      const Tensor at = ops::eq(ops::abs(x), norm).to(x.dtype());
      ga = ops::mul(ops::mul(sgn, at), ops::div(g, sum_to(at, kept)));
    } else if (ord == 1.0) {
      ga = ops::mul(sgn, g);
    } else {
      // sign(x) |x|^(p-1) g / norm^(p-1); 0 where the norm is 0.
      const Tensor safe = ops::where(ops::eq(norm, zero), scalar_like(norm, 1.0), norm);
      const Tensor scale = ops::div(g, ord == 2.0 ? safe : ops::pow(safe, ord - 1.0));
      const Tensor power = ord == 2.0 ? x : ops::mul(sgn, ops::pow(ops::abs(x), ord - 1.0));
      ga = ops::where(ops::eq(norm, zero), zero, ops::mul(power, scale));
    }
    return Grads{ga};
  });
}

Tensor outer(const Tensor& a, const Tensor& b) {
  EMBER_CHECK_SHAPE(a.dim() == 1 && b.dim() == 1, "outer: expected two 1-D tensors, got shapes ",
                    a.shape(), " and ", b.shape());
  return mul(reshape(a, {a.size(0), 1}), reshape(b, {1, b.size(0)}));
}

namespace {

Tensor scaled_sum(const char* op, const Tensor& input, const Tensor& product, double beta,
                  double alpha) {
  const Tensor p = alpha == 1.0 ? product : mul(product, alpha);
  EMBER_CHECK_SHAPE(ops::broadcast_shapes(input.shape(), p.shape(), op) == p.shape(), op,
                    ": input of shape ", input.shape(), " does not broadcast to the product's ",
                    "shape ", p.shape());
  if (beta == 0.0) return p;  // input's values, NaN included, are ignored (as PyTorch)
  return add(beta == 1.0 ? input : mul(input, beta), p);
}

}  // namespace

Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, double beta, double alpha) {
  EMBER_CHECK_SHAPE(m1.dim() == 2 && m2.dim() == 2, "addmm: expected 2-D matrices, got shapes ",
                    m1.shape(), " and ", m2.shape());
  return scaled_sum("addmm", input, matmul(m1, m2), beta, alpha);
}

Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, double beta,
               double alpha) {
  EMBER_CHECK_SHAPE(b1.dim() == 3 && b2.dim() == 3 && b1.size(0) == b2.size(0),
                    "baddbmm: expected two 3-D batches of one batch size, got shapes ", b1.shape(),
                    " and ", b2.shape());
  return scaled_sum("baddbmm", input, matmul(b1, b2), beta, alpha);
}

}  // namespace ember

// Elementwise ops: device and dtype checks, broadcasting, type promotion, output allocation,
// then one call into the device's kernel table (kernels/elementwise_shape.h).
#include "ops/elementwise.h"

#include <cmath>

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/reduce.h"

namespace ember::ops {

using kernels::BinaryOp;
using kernels::UnaryOp;

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  if (a == b) return a;
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK_SHAPE(sa == sb || sa == 1 || sb == 1, op, ": shapes ", a, " and ", b,
                      " do not broadcast: at dim ",
                      static_cast<int64_t>(i) - static_cast<int64_t>(n), " sizes ", sa, " and ", sb,
                      " differ and neither is 1");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

namespace {

// Converts to `t` when needed (a 0-D or small operand costs nothing worth avoiding).
Tensor as_dtype(const Tensor& x, DType t) {
  return x.dtype() == t ? x : x.to(t);
}

// The dtype of a Python-like scalar next to tensor `a`: a floating tensor keeps its dtype; an
// integer or bool tensor keeps its category when the scalar is integral (bool widens to int64),
// and a fractional scalar makes the result float32.
DType scalar_dtype(const Tensor& a, double v) {
  if (is_floating(a.dtype())) return a.dtype();
  if (std::isfinite(v) && v == std::trunc(v)) return a.dtype() == kBool ? kInt64 : a.dtype();
  return kFloat32;
}

// Operands that cannot be addressed with kMaxDims merged dims are materialised first.
Tensor dense(const Tensor& x, const Shape& shape) {
  return x.expand(shape).contiguous();
}

// out = a (op) b with a and b broadcast to out's shape; out is new and contiguous.
void run_binary(BinaryOp op, DType t, const Tensor& out, Tensor a, Tensor b) {
  const Device dev = out.device();
  const kernels::KernelTable& k = kernels_for(dev);
  const Shape& shape = out.shape();
  if (a.shape() == shape && b.shape() == shape && a.is_contiguous() && b.is_contiguous()) {
    k.binary_contiguous(op, t, out.numel(), out.data_ptr(), a.data_ptr(), b.data_ptr(),
                        stream_of(dev));
    return;
  }
  StridedIndex<2> index;
  if (!make_strided_index<2>(shape, {broadcast_strides(a, shape), broadcast_strides(b, shape)},
                             index)) {
    a = dense(a, shape);
    b = dense(b, shape);
    make_strided_index<2>(shape, {a.strides(), b.strides()}, index);
  }
  k.binary_strided(op, t, index, out.data_ptr(), a.data_ptr(), b.data_ptr(), stream_of(dev));
}

// The result of an in-place op is `a` itself: it must be contiguous and keep its dtype.
void check_in_place(const char* name, const Tensor& a, DType result) {
  EMBER_CHECK_VALUE(a.is_contiguous(), name, ": expected a contiguous tensor to write in place, got ",
                    "strides ", a.strides(), " for shape ", a.shape());
  EMBER_CHECK_DTYPE(result == a.dtype(), name, ": the result's dtype ", result,
                    " cannot be written into a tensor of dtype ", a.dtype());
}

// in_place: the result is written into a_in (check_in_place), which must have the broadcast shape.
Tensor binary(BinaryOp op, const char* name, const Tensor& a_in, const Tensor& b_in,
              bool in_place = false) {
  const Device dev = check_same_device(name, {&a_in, &b_in});
  DType t = promote_types(a_in.dtype(), b_in.dtype());
  if (op == BinaryOp::div && !is_floating(t)) t = kFloat32;  // true division
  EMBER_CHECK_DTYPE(!(t == kBool && (op == BinaryOp::sub || op == BinaryOp::pow)), name,
                    ": not supported for two bool tensors (got ", a_in.dtype(), " and ",
                    b_in.dtype(), "); convert one to an integer or floating dtype");
  check_compute_dtype(name, t, dev);
  const Shape shape = broadcast_shapes(a_in.shape(), b_in.shape(), name);
  const DType result = kernels::is_comparison(op) ? kBool : t;
  if (in_place) {
    check_in_place(name, a_in, result);
    EMBER_CHECK_SHAPE(shape == a_in.shape(), name, ": the result's shape ", shape,
                      " cannot be written into a tensor of shape ", a_in.shape());
  }
  const Tensor a = as_dtype(a_in, t), b = as_dtype(b_in, t);
  Tensor out = in_place ? a_in : empty(shape, {result, dev});
  if (out.numel() > 0) run_binary(op, t, out, a, b);
  return out;
}

Tensor binary_scalar(BinaryOp op, const char* name, const Tensor& a, double v) {
  return binary(op, name, a, full({}, v, {scalar_dtype(a, v), a.device()}));
}

// Floating-only unary ops turn integer and bool input into float32, as PyTorch does.
// in_place: the result is written into a_in (check_in_place).
Tensor unary(UnaryOp op, const char* name, const Tensor& a_in, bool floating,
             kernels::UnaryParams params = {}, bool in_place = false) {
  const Device dev = a_in.device();
  EMBER_CHECK_DTYPE(floating || a_in.dtype() != kBool, name,
                    ": not supported for bool tensors (got ", a_in.dtype(), " of shape ",
                    a_in.shape(), "); expected a numeric dtype");
  const DType t = floating && !is_floating(a_in.dtype()) ? kFloat32 : a_in.dtype();
  check_compute_dtype(name, t, dev);
  if (in_place) check_in_place(name, a_in, t);
  Tensor a = as_dtype(a_in, t);
  Tensor out = in_place ? a_in : empty(a.shape(), {t, dev});
  if (out.numel() == 0) return out;
  const kernels::KernelTable& k = kernels_for(dev);
  StridedIndex<1> index;
  if (!a.is_contiguous() && !make_strided_index<1>(a.shape(), {a.strides()}, index))
    a = a.contiguous();
  if (a.is_contiguous())
    k.unary_contiguous(op, t, params, out.numel(), out.data_ptr(), a.data_ptr(), stream_of(dev));
  else
    k.unary_strided(op, t, params, index, out.data_ptr(), a.data_ptr(), stream_of(dev));
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::add, "add", a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::sub, "sub", a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::mul, "mul", a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::div, "div", a, b);
}
Tensor pow(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::pow, "pow", a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::maximum, "maximum", a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::minimum, "minimum", a, b);
}

namespace {

// Integer fmod/remainder by 0 is an error, as PyTorch's ZeroDivisionError on the cpu (checked on
// every device; on a GPU the check waits for it once).
Tensor integer_division(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  const DType t = promote_types(a.dtype(), b.dtype());
  EMBER_CHECK_DTYPE(t != kBool, name, ": not supported for two bool tensors");
  if (!is_floating(t) && b.numel() > 0) {
    const Tensor zero = zeros({}, {b.dtype(), b.device()});
    EMBER_CHECK_VALUE(sum(eq(b, zero)).item() == 0.0, name,
                      ": integer division by zero (a divisor of ", b.dtype(), " is 0)");
  }
  return binary(op, name, a, b);
}

}  // namespace

Tensor fmod(const Tensor& a, const Tensor& b) {
  return integer_division(BinaryOp::fmod, "fmod", a, b);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  return integer_division(BinaryOp::remainder, "remainder", a, b);
}

Tensor add(const Tensor& a, double b) {
  return binary_scalar(BinaryOp::add, "add", a, b);
}
Tensor mul(const Tensor& a, double b) {
  return binary_scalar(BinaryOp::mul, "mul", a, b);
}
Tensor pow(const Tensor& a, double e) {
  return binary_scalar(BinaryOp::pow, "pow", a, e);
}

Tensor neg(const Tensor& a) {
  return unary(UnaryOp::neg, "neg", a, false);
}
Tensor abs(const Tensor& a) {
  return unary(UnaryOp::abs, "abs", a, false);
}
Tensor exp(const Tensor& a) {
  return unary(UnaryOp::exp, "exp", a, true);
}
Tensor log(const Tensor& a) {
  return unary(UnaryOp::log, "log", a, true);
}
Tensor sqrt(const Tensor& a) {
  return unary(UnaryOp::sqrt, "sqrt", a, true);
}
Tensor rsqrt(const Tensor& a) {
  return unary(UnaryOp::rsqrt, "rsqrt", a, true);
}
Tensor sign(const Tensor& a) {
  return unary(UnaryOp::sign, "sign", a, false);
}
Tensor floor(const Tensor& a) {
  return unary(UnaryOp::floor, "floor", a, false);
}
Tensor ceil(const Tensor& a) {
  return unary(UnaryOp::ceil, "ceil", a, false);
}
Tensor round(const Tensor& a) {
  return unary(UnaryOp::round, "round", a, false);
}
Tensor trunc(const Tensor& a) {
  return unary(UnaryOp::trunc, "trunc", a, false);
}
Tensor sin(const Tensor& a) {
  return unary(UnaryOp::sin, "sin", a, true);
}
Tensor cos(const Tensor& a) {
  return unary(UnaryOp::cos, "cos", a, true);
}
Tensor erf(const Tensor& a) {
  return unary(UnaryOp::erf, "erf", a, true);
}
Tensor clamp(const Tensor& a, double lo, double hi) {
  EMBER_CHECK_VALUE(!std::isnan(lo) && !std::isnan(hi), "clamp: bounds must not be NaN, got [", lo,
                    ", ", hi, "]");
  return unary(UnaryOp::clamp, "clamp", a, false, {lo, hi});
}
Tensor clamp_(const Tensor& a, double lo, double hi) {
  EMBER_CHECK_VALUE(!std::isnan(lo) && !std::isnan(hi), "clamp_: bounds must not be NaN, got [",
                    lo, ", ", hi, "]");
  return unary(UnaryOp::clamp, "clamp_", a, false, {lo, hi}, /*in_place=*/true);
}
Tensor add_(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::add, "add_", a, b, /*in_place=*/true);
}

Tensor eq(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::eq, "eq", a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::ne, "ne", a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::lt, "lt", a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::le, "le", a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::gt, "gt", a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return binary(BinaryOp::ge, "ge", a, b);
}

Tensor where(const Tensor& cond, const Tensor& a_in, const Tensor& b_in) {
  const Device dev = check_same_device("where", {&cond, &a_in, &b_in});
  EMBER_CHECK_DTYPE(cond.dtype() == kBool, "where: expected a bool condition, got ", cond.dtype(),
                    " (compare with a value, e.g. gt(x, zero), to make a bool tensor)");
  const DType t = promote_types(a_in.dtype(), b_in.dtype());
  check_compute_dtype("where", t, dev);
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a_in.shape(), "where"),
                                       b_in.shape(), "where");
  Tensor a = as_dtype(a_in, t), b = as_dtype(b_in, t);
  Tensor out = empty(shape, {t, dev});
  if (out.numel() == 0) return out;
  {
    Tensor c = cond;
    StridedIndex<3> index;
    if (!make_strided_index<3>(
            shape,
            {broadcast_strides(c, shape), broadcast_strides(a, shape), broadcast_strides(b, shape)},
            index)) {
      c = dense(c, shape), a = dense(a, shape), b = dense(b, shape);
      make_strided_index<3>(shape, {c.strides(), a.strides(), b.strides()}, index);
    }
    kernels_for(dev).where_strided(t, index, out.data_ptr(),
                                   static_cast<const bool*>(c.data_ptr()), a.data_ptr(),
                                   b.data_ptr(), stream_of(dev));
  }
  return out;
}

}  // namespace ember::ops

// Elementwise ops: device and dtype checks, broadcasting, type promotion, output allocation,
// then one call into kernels/cpu/elementwise or, on cuda/emu, the GPU kernel table.
#include "ops/elementwise.h"

#include <cmath>

#include "kernels/cpu/elementwise.h"
#include "ops/checks.h"
#include "ops/gpu_kernels.h"

namespace ember::ops {

namespace kc = kernels::cpu;

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

// The GPU kernels take the same op codes.
static_assert(static_cast<int>(kc::BinaryOp::ge) == static_cast<int>(gpu_types::BinaryOp::ge) &&
              static_cast<int>(kc::BinaryOp::pow) == static_cast<int>(gpu_types::BinaryOp::pow));
static_assert(static_cast<int>(kc::UnaryOp::clamp) == static_cast<int>(gpu_types::UnaryOp::clamp));
gpu_types::BinaryOp gpu_op(kc::BinaryOp op) {
  return static_cast<gpu_types::BinaryOp>(op);
}
gpu_types::UnaryOp gpu_op(kc::UnaryOp op) {
  return static_cast<gpu_types::UnaryOp>(op);
}

// Operands that cannot be addressed with kMaxDims merged dims are materialised first.
Tensor dense(const Tensor& x, const Shape& shape) {
  return x.expand(shape).contiguous();
}

void binary_gpu(kc::BinaryOp op, DType t, const Tensor& out, Tensor a, Tensor b) {
  const GpuKernels& k = gpu_kernels(out.device());
  const Shape& shape = out.shape();
  const gpu_types::Scalar st = gpu_scalar(t, "binary op");
  gpu_types::StridedIndex<2> index;
  if (!(a.shape() == shape && b.shape() == shape && a.is_contiguous() && b.is_contiguous()) &&
      !make_strided_index<2>(shape, {broadcast_strides(a, shape), broadcast_strides(b, shape)},
                             index)) {
    a = dense(a, shape);
    b = dense(b, shape);
  }
  if (a.shape() == shape && b.shape() == shape && a.is_contiguous() && b.is_contiguous()) {
    k.binary_contiguous(gpu_op(op), st, out.numel(), out.data_ptr(), a.data_ptr(), b.data_ptr(),
                        nullptr);
    return;
  }
  k.binary_strided(gpu_op(op), st, index, out.data_ptr(), a.data_ptr(), b.data_ptr(), nullptr);
}

Tensor binary(kc::BinaryOp op, const char* name, const Tensor& a_in, const Tensor& b_in) {
  const Device dev = check_same_device(name, {&a_in, &b_in});
  check_cpu_dtype(name, a_in.dtype());
  check_cpu_dtype(name, b_in.dtype());
  DType t = promote_types(a_in.dtype(), b_in.dtype());
  if (op == kc::BinaryOp::div && !is_floating(t)) t = kFloat32;  // true division
  EMBER_CHECK_DTYPE(!(t == kBool && (op == kc::BinaryOp::sub || op == kc::BinaryOp::pow)), name,
                    ": not supported for two bool tensors (got ", a_in.dtype(), " and ",
                    b_in.dtype(), "); convert one to an integer or floating dtype");
  check_compute_dtype(name, t, dev);
  const Shape shape = broadcast_shapes(a_in.shape(), b_in.shape(), name);
  const Tensor a = as_dtype(a_in, t), b = as_dtype(b_in, t);
  Tensor out = empty(shape, {kc::is_comparison(op) ? kBool : t, dev});
  if (out.numel() == 0) return out;
  if (dev.is_gpu_like()) {
    binary_gpu(op, t, out, a, b);
    return out;
  }
  if (a.shape() == shape && b.shape() == shape && a.is_contiguous() && b.is_contiguous()) {
    kc::binary_contiguous_cpu(op, t, out.numel(), out.data_ptr(), a.data_ptr(), b.data_ptr());
    return out;
  }
  kc::StridedShape<3> s{shape,
                        {broadcast_byte_strides(out, shape), broadcast_byte_strides(a, shape),
                         broadcast_byte_strides(b, shape)}};
  kc::binary_cpu(op, t, s, out.data_ptr(), a.data_ptr(), b.data_ptr());
  return out;
}

Tensor binary_scalar(kc::BinaryOp op, const char* name, const Tensor& a, double v) {
  check_cpu_dtype(name, a.dtype());
  return binary(op, name, a, full({}, v, {scalar_dtype(a, v), a.device()}));
}

// Floating-only unary ops turn integer and bool input into float32, as PyTorch does.
Tensor unary(kc::UnaryOp op, const char* name, const Tensor& a_in, bool floating,
             kc::UnaryParams params = {}) {
  const Device dev = a_in.device();
  check_cpu_dtype(name, a_in.dtype());
  EMBER_CHECK_DTYPE(floating || a_in.dtype() != kBool, name,
                    ": not supported for bool tensors (got ", a_in.dtype(), " of shape ",
                    a_in.shape(), "); expected a numeric dtype");
  const DType t = floating && !is_floating(a_in.dtype()) ? kFloat32 : a_in.dtype();
  check_compute_dtype(name, t, dev);
  Tensor a = as_dtype(a_in, t);
  Tensor out = empty(a.shape(), {t, dev});
  if (out.numel() == 0) return out;
  if (dev.is_gpu_like()) {
    const GpuKernels& k = gpu_kernels(dev);
    gpu_types::StridedIndex<1> index;
    if (!a.is_contiguous() && !make_strided_index<1>(a.shape(), {a.strides()}, index))
      a = a.contiguous();
    if (a.is_contiguous())
      k.unary_contiguous(gpu_op(op), gpu_scalar(t, name), params.lo, params.hi, out.numel(),
                         out.data_ptr(), a.data_ptr(), nullptr);
    else
      k.unary_strided(gpu_op(op), gpu_scalar(t, name), params.lo, params.hi, index, out.data_ptr(),
                      a.data_ptr(), nullptr);
    return out;
  }
  if (a.is_contiguous()) {
    kc::unary_contiguous_cpu(op, t, params, out.numel(), out.data_ptr(), a.data_ptr());
    return out;
  }
  kc::StridedShape<2> s{
      a.shape(), {broadcast_byte_strides(out, a.shape()), broadcast_byte_strides(a, a.shape())}};
  kc::unary_cpu(op, t, params, s, out.data_ptr(), a.data_ptr());
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::add, "add", a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::sub, "sub", a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::mul, "mul", a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::div, "div", a, b);
}
Tensor pow(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::pow, "pow", a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::maximum, "maximum", a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::minimum, "minimum", a, b);
}

Tensor add(const Tensor& a, double b) {
  return binary_scalar(kc::BinaryOp::add, "add", a, b);
}
Tensor mul(const Tensor& a, double b) {
  return binary_scalar(kc::BinaryOp::mul, "mul", a, b);
}
Tensor pow(const Tensor& a, double e) {
  return binary_scalar(kc::BinaryOp::pow, "pow", a, e);
}

Tensor neg(const Tensor& a) {
  return unary(kc::UnaryOp::neg, "neg", a, false);
}
Tensor abs(const Tensor& a) {
  return unary(kc::UnaryOp::abs, "abs", a, false);
}
Tensor exp(const Tensor& a) {
  return unary(kc::UnaryOp::exp, "exp", a, true);
}
Tensor log(const Tensor& a) {
  return unary(kc::UnaryOp::log, "log", a, true);
}
Tensor sqrt(const Tensor& a) {
  return unary(kc::UnaryOp::sqrt, "sqrt", a, true);
}
Tensor rsqrt(const Tensor& a) {
  return unary(kc::UnaryOp::rsqrt, "rsqrt", a, true);
}
Tensor clamp(const Tensor& a, double lo, double hi) {
  EMBER_CHECK_VALUE(!std::isnan(lo) && !std::isnan(hi), "clamp: bounds must not be NaN, got [", lo,
                    ", ", hi, "]");
  return unary(kc::UnaryOp::clamp, "clamp", a, false, {lo, hi});
}

Tensor eq(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::eq, "eq", a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::ne, "ne", a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::lt, "lt", a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::le, "le", a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::gt, "gt", a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return binary(kc::BinaryOp::ge, "ge", a, b);
}

Tensor where(const Tensor& cond, const Tensor& a_in, const Tensor& b_in) {
  const Device dev = check_same_device("where", {&cond, &a_in, &b_in});
  EMBER_CHECK_DTYPE(cond.dtype() == kBool, "where: expected a bool condition, got ", cond.dtype(),
                    " (compare with a value, e.g. gt(x, zero), to make a bool tensor)");
  check_cpu_dtype("where", a_in.dtype());
  check_cpu_dtype("where", b_in.dtype());
  const DType t = promote_types(a_in.dtype(), b_in.dtype());
  check_compute_dtype("where", t, dev);
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a_in.shape(), "where"),
                                       b_in.shape(), "where");
  Tensor a = as_dtype(a_in, t), b = as_dtype(b_in, t);
  Tensor out = empty(shape, {t, dev});
  if (out.numel() == 0) return out;
  if (dev.is_gpu_like()) {
    Tensor c = cond;
    gpu_types::StridedIndex<3> index;
    if (!make_strided_index<3>(
            shape,
            {broadcast_strides(c, shape), broadcast_strides(a, shape), broadcast_strides(b, shape)},
            index)) {
      c = dense(c, shape), a = dense(a, shape), b = dense(b, shape);
      make_strided_index<3>(shape, {c.strides(), a.strides(), b.strides()}, index);
    }
    gpu_kernels(dev).where_strided(gpu_scalar(t, "where"), index, out.data_ptr(),
                                   static_cast<const bool*>(c.data_ptr()), a.data_ptr(),
                                   b.data_ptr(), nullptr);
    return out;
  }
  kc::StridedShape<4> s{shape,
                        {broadcast_byte_strides(out, shape), broadcast_byte_strides(cond, shape),
                         broadcast_byte_strides(a, shape), broadcast_byte_strides(b, shape)}};
  kc::where_cpu(t, s, out.data_ptr(), static_cast<const bool*>(cond.data_ptr()), a.data_ptr(),
                b.data_ptr());
  return out;
}

}  // namespace ember::ops

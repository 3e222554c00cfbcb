// linear: checks, then one GEMM on x viewed as a matrix (w^T a strided view) and an in-place
// bias add: the device's strided elementwise add, bias read with a zero stride over the rows.
#include "ops/linear.h"

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace ember::ops {

namespace {

void check_linear(const char* op, const Tensor& x, const Tensor& w, const Tensor& b) {
  check_same_device(op, {&x, &w});
  if (b.defined()) check_same_device(op, {&x, &b});
  check_floating(op, x);
  EMBER_CHECK_DTYPE(w.dtype() == x.dtype() && (!b.defined() || b.dtype() == x.dtype()), op,
                    ": expected input, weight and bias of one dtype, got ", x.dtype(), ", ",
                    w.dtype(), (b.defined() ? ", " : ""),
                    (b.defined() ? dtype_name(b.dtype()) : ""));
  EMBER_CHECK_SHAPE(x.dim() >= 1, op, ": expected an input of shape [..., in], got a 0-D tensor");
  EMBER_CHECK_SHAPE(w.dim() == 2, op, ": expected weight of shape [out, in], got ", w.shape());
  EMBER_CHECK_SHAPE(x.size(-1) == w.size(1), op, ": input ", x.shape(), " has ", x.size(-1),
                    " features but weight ", w.shape(), " expects ", w.size(1));
  EMBER_CHECK_SHAPE(!b.defined() || (b.dim() == 1 && b.size(0) == w.size(0)), op,
                    ": expected bias of shape [", w.size(0), "], got ", b.shape());
}

Shape with_last(const Shape& s, int64_t last) {
  Shape r = s;
  r.back() = last;
  return r;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  check_linear("linear", x, w, b);
  if (is_half(x.dtype())) {
    // The float32 linear of widened copies, so that the product and the bias round once together
    // (Note [Widened half ops] in ops/dispatch.h).
    return linear(x.to(kFloat32), w.to(kFloat32), widen_half(b)).to(x.dtype());
  }
  const int64_t in = w.size(1), out_f = w.size(0);
  Tensor y = mm(x.reshape({-1, in}), w.t());
  if (b.defined() && y.numel() > 0) {
    const Tensor bc = b.contiguous();
    // y += b in place: y is contiguous [rows, out], so it is both an input and the output.
    StridedIndex<2> index;
    make_strided_index<2>(y.shape(), {y.strides(), broadcast_strides(bc, y.shape())}, index);
    kernels_for(y.device())
        .binary_strided(kernels::BinaryOp::add, y.dtype(), index, y.data_ptr(), y.data_ptr(),
                        bc.data_ptr(), stream_of(y.device()));
  }
  return y.view(with_last(x.shape(), out_f));
}

LinearGrads linear_backward(const Tensor& grad_out, const Tensor& x, const Tensor& w,
                            bool want_input, bool want_weight, bool want_bias) {
  const char* op = "linear_backward";
  check_linear(op, x, w, Tensor());
  check_same_device(op, {&x, &grad_out});
  EMBER_CHECK_SHAPE(grad_out.shape() == with_last(x.shape(), w.size(0)), op,
                    ": expected grad_out of shape ", with_last(x.shape(), w.size(0)), ", got ",
                    grad_out.shape());
  EMBER_CHECK_DTYPE(grad_out.dtype() == x.dtype(), op, ": expected grad_out of dtype ", x.dtype(),
                    ", got ", grad_out.dtype());
  const Tensor g2 = grad_out.reshape({-1, w.size(0)});
  LinearGrads r;
  if (want_input) r.grad_input = mm(g2, w).view(x.shape());
  if (want_weight) r.grad_weight = mm(g2.t(), x.reshape({-1, w.size(1)}));
  if (want_bias) r.grad_bias = sum(g2, {0});
  return r;
}

}  // namespace ember::ops

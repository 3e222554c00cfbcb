// softmax / log_softmax: checks, the [outer, dim, inner] view, then the device's softmax kernels
// (kernels/softmax_shape.h).
#include "ops/softmax.h"

#include "ops/checks.h"
#include "ops/cudnn_ops.h"
#include "ops/dispatch.h"

namespace ember::ops {

namespace {

kernels::SoftmaxShape view_as_3d(const Tensor& x, int64_t dim, const char* op) {
  const int64_t nd = std::max<int64_t>(x.dim(), 1);
  const int64_t d = wrap_dim(dim, nd, op);
  kernels::SoftmaxShape s;
  if (x.dim() == 0) return s;
  for (int64_t i = 0; i < d; ++i) s.outer *= x.size(i);
  s.dim = x.size(d);
  for (int64_t i = d + 1; i < x.dim(); ++i) s.inner *= x.size(i);
  return s;
}

Tensor forward(const char* op, bool log, const Tensor& x_in, int64_t dim) {
  check_floating(op, x_in);
  const kernels::SoftmaxShape s = view_as_3d(x_in, dim, op);
  const Tensor x = x_in.contiguous();
  const Device dev = x.device();
  Tensor y = empty(x.shape(), {x.dtype(), dev});
  if (y.numel() == 0) return y;
  run_softmax_forward(dev, log, x.dtype(), s, x.data_ptr(), y.data_ptr(), [&](bool) {
    kernels_for(dev).softmax_fwd(x.dtype(), s, log, x.data_ptr(), y.data_ptr(), stream_of(dev));
  });
  return y;
}

Tensor backward(const char* op, bool log, const Tensor& g_in, const Tensor& y_in, int64_t dim) {
  check_floating(op, y_in);
  const Device dev = check_same_device(op, {&y_in, &g_in});
  EMBER_CHECK_SHAPE(g_in.shape() == y_in.shape(), op, ": expected grad_out of shape ", y_in.shape(),
                    ", got ", g_in.shape());
  EMBER_CHECK_DTYPE(g_in.dtype() == y_in.dtype(), op, ": expected grad_out of dtype ", y_in.dtype(),
                    ", got ", g_in.dtype());
  const kernels::SoftmaxShape s = view_as_3d(y_in, dim, op);
  const Tensor y = y_in.contiguous(), g = g_in.contiguous();
  Tensor dx = empty(y.shape(), {y.dtype(), dev});
  if (dx.numel() == 0) return dx;
  run_softmax_backward(dev, log, y.dtype(), s, y.data_ptr(), g.data_ptr(), dx.data_ptr(),
                       [&](bool) {
                         kernels_for(dev).softmax_bwd(y.dtype(), s, log, y.data_ptr(), g.data_ptr(),
                                                      dx.data_ptr(), stream_of(dev));
                       });
  return dx;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  return forward("softmax", false, x, dim);
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  return forward("log_softmax", true, x, dim);
}
Tensor softmax_backward(const Tensor& g, const Tensor& y, int64_t dim) {
  return backward("softmax_backward", false, g, y, dim);
}
Tensor log_softmax_backward(const Tensor& g, const Tensor& y, int64_t dim) {
  return backward("log_softmax_backward", true, g, y, dim);
}

}  // namespace ember::ops

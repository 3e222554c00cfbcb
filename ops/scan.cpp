// Scans: the dim moved into the middle of an [outer, n, inner] block (a contiguous copy only when
// the input is not one already), then one call to the device's scan kernels.
#include "ops/scan.h"

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ember::ops {
namespace {

kernels::ScanShape scan_shape(const Tensor& x, int64_t d) {
  kernels::ScanShape s;
  s.n = x.dim() == 0 ? 1 : x.size(d);
  for (int64_t k = 0; k < d; ++k) s.outer *= x.size(k);
  for (int64_t k = d + 1; k < x.dim(); ++k) s.inner *= x.size(k);
  return s;
}

Tensor run_scan(kernels::ScanOp op, const char* name, const Tensor& x_in, int64_t dim,
                std::optional<DType> dtype, bool reverse) {
  const Tensor x = dtype && *dtype != x_in.dtype() ? x_in.to(*dtype) : x_in.contiguous();
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), name);
  const Device dev = x.device();
  check_compute_dtype(name, is_floating(x.dtype()) ? x.dtype() : kInt64, dev);
  Tensor out = empty(x.shape(), {is_floating(x.dtype()) ? x.dtype() : kInt64, dev});
  if (out.numel() == 0) return out;
  kernels::ScanShape s = scan_shape(x, d);
  s.reverse = reverse;
  kernels_for(dev).scan(op, x.dtype(), s, x.data_ptr(), out.data_ptr(), stream_of(dev));
  return out;
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype, bool reverse) {
  return run_scan(kernels::ScanOp::sum, "cumsum", x, dim, dtype, reverse);
}

Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return run_scan(kernels::ScanOp::prod, "cumprod", x, dim, dtype, false);
}

Tensor cumprod_backward(const Tensor& x_in, const Tensor& dy_in, int64_t dim) {
  const char* name = "cumprod_backward";
  const Device dev = check_same_device(name, {&x_in, &dy_in});
  check_floating(name, x_in);
  EMBER_CHECK_SHAPE(x_in.shape() == dy_in.shape(), name, ": x of shape ", x_in.shape(),
                    " and dy of shape ", dy_in.shape(), " differ");
  // Note [Widened half ops]: the kernels run float32 and float64.
  const DType t = x_in.dtype();
  const Tensor x = widen_half(x_in).contiguous();
  const Tensor dy = widen_half(dy_in).to(x.dtype()).contiguous();
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), name);
  Tensor dx = empty(x.shape(), {x.dtype(), dev});
  if (dx.numel() > 0)
    kernels_for(dev).cumprod_backward(x.dtype(), scan_shape(x, d), x.data_ptr(), dy.data_ptr(),
                                      dx.data_ptr(), stream_of(dev));
  return dx.dtype() == t ? dx : dx.to(t);
}

}  // namespace ember::ops

// Dropout: checks, the generator's stream reservation, output allocation, then
// the device's dropout kernels (kernels/dropout_math.h), which draw the same mask everywhere.
#include "ops/dropout.h"


#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ember::ops {

DropoutOutput dropout(const Tensor& x_in, double p, bool training, Generator* gen) {
  EMBER_CHECK_VALUE(p >= 0 && p <= 1, "dropout: expected a probability 0 <= p <= 1, got ", p);
  check_floating("dropout", x_in);
  const Device dev = x_in.device();
  if (!training || p == 0) return {x_in, Tensor()};
  if (p == 1) return {zeros(x_in.shape(), {x_in.dtype(), dev}), Tensor()};
  const Tensor x = x_in.contiguous();
  DropoutOutput r{empty(x.shape(), {x.dtype(), dev}), empty(x.shape(), {kBool, dev})};
  const int64_t n = x.numel();
  Generator& g = gen ? *gen : default_generator();
  const uint64_t seed = g.seed();
  const uint64_t offset = g.reserve(static_cast<uint64_t>(n));
  if (n > 0)
    kernels_for(dev).dropout_fwd(x.dtype(), n, seed, offset, p, 1.0 / (1.0 - p), x.data_ptr(),
                                 r.mask.data<bool>(), r.out.data_ptr(), stream_of(dev));
  return r;
}

Tensor dropout_backward(const Tensor& grad_out, const Tensor& mask, double p) {
  const char* op = "dropout_backward";
  EMBER_CHECK_VALUE(p >= 0 && p < 1, op, ": expected 0 <= p < 1, got ", p);
  check_floating(op, grad_out);
  const Device dev = check_same_device(op, {&grad_out, &mask});
  EMBER_CHECK_DTYPE(mask.dtype() == kBool, op, ": expected a bool mask, got ", mask.dtype());
  EMBER_CHECK_SHAPE(mask.shape() == grad_out.shape(), op, ": expected a mask of shape ",
                    grad_out.shape(), ", got ", mask.shape());
  const Tensor g = grad_out.contiguous(), m = mask.contiguous();
  Tensor dx = empty(g.shape(), {g.dtype(), dev});
  if (dx.numel() == 0) return dx;
  kernels_for(dev).dropout_bwd(g.dtype(), g.numel(), 1.0 / (1.0 - p), m.data<bool>(),
                               g.data_ptr(), dx.data_ptr(), stream_of(dev));
  return dx;
}

}  // namespace ember::ops

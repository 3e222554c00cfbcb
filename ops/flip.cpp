// flip and roll: one strided copy each (per rolled dim, two), through the device's copy kernel.
#include "ops/flip.h"

#include "ops/dispatch.h"

namespace ember::ops {
namespace {

std::vector<bool> dim_set(const char* op, const Tensor& x, const std::vector<int64_t>& dims) {
  std::vector<bool> in(static_cast<size_t>(x.dim()), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, std::max<int64_t>(x.dim(), 1), op);
    EMBER_CHECK_VALUE(x.dim() == 0 || !in[w], op, ": dim ", w, " appears more than once in ",
                      Shape(dims));
    if (x.dim() > 0) in[w] = true;
  }
  return in;
}

}  // namespace

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  const std::vector<bool> flipped = dim_set("flip", x, dims);
  const Device dev = x.device();
  Tensor out = empty(x.shape(), {x.dtype(), dev});
  if (out.numel() == 0) return out;
  // x read backwards along the flipped dims: negated strides from its last element there.
  Shape src = x.strides();
  int64_t start = 0;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!flipped[d]) continue;
    start += (x.size(d) - 1) * x.stride(d);
    src[d] = -src[d];
  }
  const void* base = static_cast<const char*>(x.data_ptr()) + start * int64_t(x.element_size());
  StridedIndex<2> index;
  EMBER_CHECK_SHAPE(make_strided_index<2>(x.shape(), {out.strides(), src}, index),
                    "flip: a tensor of shape ", x.shape(), " flipped along ", Shape(dims),
                    " has more than ", kMaxDims, " dims that do not merge; reshape it first");
  kernels_for(dev).copy_strided(x.dtype(), x.dtype(), index, out.data_ptr(), base, stream_of(dev));
  return out;
}

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  EMBER_CHECK_VALUE(!shifts.empty(), "roll: expected at least one shift");
  if (dims.empty()) {
    EMBER_CHECK_VALUE(shifts.size() == 1, "roll: ", shifts.size(),
                      " shifts given without dims; expected one");
    return roll(x.reshape({x.numel()}), shifts, {0}).reshape(x.shape());
  }
  EMBER_CHECK_VALUE(shifts.size() == dims.size(), "roll: ", shifts.size(), " shifts for ",
                    dims.size(), " dims; expected as many shifts as dims");
  Tensor cur = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], std::max<int64_t>(x.dim(), 1), "roll");
    Tensor out = empty(cur.shape(), {cur.dtype(), cur.device()});
    const int64_t n = cur.dim() == 0 ? 1 : cur.size(d);
    const int64_t s = n == 0 ? 0 : ((shifts[i] % n) + n) % n;
    if (cur.dim() == 0 || s == 0) {
      out.copy_(cur);
    } else {
      // out[s:] = cur[:n-s], out[:s] = cur[n-s:]
      out.slice(d, s, n).copy_(cur.slice(d, 0, n - s));
      out.slice(d, 0, s).copy_(cur.slice(d, n - s, n));
    }
    cur = out;
  }
  return cur;
}

}  // namespace ember::ops

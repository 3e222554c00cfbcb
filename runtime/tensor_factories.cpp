// Tensor factories: new tensors on a device (empty, zeros, ones, full, arange), from host memory
// (from_host, copied) and around memory owned elsewhere (from_blob, not copied).
#include <cmath>

#include "runtime/tensor.h"
#include "runtime/tensor_copy.h"

namespace ember {

namespace {
std::shared_ptr<TensorImpl> new_impl(const Shape& shape, DType dtype, Device device) {
  int64_t n = checked_numel(shape);
  size_t bytes;
  EMBER_CHECK_SHAPE(!__builtin_mul_overflow(static_cast<size_t>(n), itemsize(dtype), &bytes),
                    "shape ", shape, " of ", dtype, " needs more bytes than fit in size_t");
  auto st = std::make_shared<StorageImpl>();
  st->data = allocator_for(device).allocate(bytes);
  st->nbytes = bytes;
  st->device = device;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(st);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return impl;
}
}  // namespace

Tensor empty(const Shape& shape, TensorOptions opts) {
  return Tensor(new_impl(shape, opts.dtype, opts.device));
}

Tensor full(const Shape& shape, double value, TensorOptions opts) {
  Tensor t = empty(shape, opts);
  t.fill_(value);
  return t;
}
Tensor zeros(const Shape& shape, TensorOptions opts) { return full(shape, 0.0, opts); }
Tensor ones(const Shape& shape, TensorOptions opts) { return full(shape, 1.0, opts); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), {t.dtype(), t.device()}); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), {t.dtype(), t.device()}); }

Tensor arange(double start, double end, double step, TensorOptions opts) {
  EMBER_CHECK_VALUE(step != 0.0, "arange: step must be non-zero");
  EMBER_CHECK_VALUE(std::isfinite(start) && std::isfinite(end) && std::isfinite(step),
                    "arange: start, end and step must be finite, got ", start, ", ", end, ", ",
                    step);
  double len = std::ceil((end - start) / step);
  EMBER_CHECK_VALUE(len < 9.0e15, "arange: ", len, " elements is too many");
  int64_t n = len > 0 ? static_cast<int64_t>(len) : 0;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
  return from_host(v.data(), Shape{n}, kFloat64, kCPU).to(opts.device, opts.dtype);
}
Tensor arange(int64_t end, TensorOptions opts) {
  return arange(0.0, static_cast<double>(end), 1.0, opts);
}

Tensor from_host(const void* data, const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, {dtype, device});
  size_t bytes = static_cast<size_t>(t.numel()) * itemsize(dtype);
  EMBER_CHECK_VALUE(data != nullptr || bytes == 0, "from_host: null data for shape ", shape);
  copy_bytes(t.data_ptr(), device, data, kCPU, bytes);
  return t;
}

Tensor from_blob(void* data, const Shape& shape, const Shape& strides, DType dtype,
                 std::shared_ptr<void> owner) {
  EMBER_CHECK_SHAPE(shape.size() == strides.size(), "from_blob: shape ", shape, " and strides ",
                    strides, " differ in length");
  int64_t n = checked_numel(shape);
  int64_t max_off = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    EMBER_CHECK_SHAPE(strides[d] >= 0, "from_blob: negative strides are not supported, got ",
                      strides);
    if (shape[d] > 0) max_off += (shape[d] - 1) * strides[d];
  }
  auto st = std::make_shared<StorageImpl>();
  st->data = DataPtr(data, [owner](void*) {});
  st->nbytes = n == 0 ? 0 : static_cast<size_t>(max_off + 1) * itemsize(dtype);
  st->device = kCPU;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(st);
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace ember

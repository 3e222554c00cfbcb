// Tensor: a cheap, shared handle to a strided view of typed memory on a device.
//
// A Tensor holds a shared pointer to a TensorImpl (storage, element offset, shape, strides,
// dtype, autograd slot). Copying a Tensor copies the handle; views (view, reshape, permute,
// transpose, slice, select, expand, squeeze, unsqueeze, flatten) share storage with their base.
// Writes through any view bump the storage's version counter, which autograd checks.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/autograd_meta.h"
#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/error.h"

namespace ember {

// A list of sizes or strides. A distinct type (not a bare std::vector) so that it prints as
// "[2, 3]" in error messages.
struct Shape : std::vector<int64_t> {
  using std::vector<int64_t>::vector;
  Shape() = default;
  Shape(const std::vector<int64_t>& v) : std::vector<int64_t>(v) {}  // NOLINT
};
std::ostream& operator<<(std::ostream& os, const Shape& s);

// Number of elements of a shape; throws ShapeError on negative sizes or int64 overflow.
int64_t checked_numel(const Shape& shape);
// Contiguous (row-major) strides for a shape.
Shape contiguous_strides(const Shape& shape);
// Maps a possibly negative dim into [0, ndim); throws IndexError naming `op` if out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

struct StorageImpl {
  DataPtr data;
  size_t nbytes = 0;
  Device device;
  std::atomic<uint32_t> version{0};
};

struct TensorOptions {
  DType dtype = kFloat32;
  Device device = kCPU;
  TensorOptions() = default;
  TensorOptions(DType t) : dtype(t) {}                    // NOLINT: lets `zeros(s, kInt64)` read well
  TensorOptions(Device d) : device(d) {}                  // NOLINT
  TensorOptions(DType t, Device d) : dtype(t), device(d) {}
};

class Tensor;

struct TensorImpl {
  std::shared_ptr<StorageImpl> storage;
  int64_t offset = 0;  // in elements
  Shape shape, strides;
  DType dtype = kFloat32;
  std::shared_ptr<AutogradMetaInterface> autograd;
  // For a view: the tensor it was made from, followed to the root (never itself a view), so that
  // an in-place write through the view can update the root's autograd history
  // (autograd/inplace.h). Null for tensors that are not views.
  std::shared_ptr<TensorImpl> base;
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  const Shape& shape() const { return checked().shape; }
  const Shape& strides() const { return checked().strides; }
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  // Size of dim `d` (negative counts from the end).
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t numel() const;
  int64_t offset() const { return checked().offset; }
  DType dtype() const { return checked().dtype; }
  Device device() const { return checked().storage->device; }
  size_t element_size() const { return itemsize(dtype()); }
  bool is_contiguous() const;
  const std::shared_ptr<StorageImpl>& storage() const { return checked().storage; }

  // Address of the first element (storage base + offset). Null for empty tensors.
  void* data_ptr() const;
  // Typed address; throws DTypeError if T does not match the dtype.
  template <typename T> T* data() const {
    EMBER_CHECK_DTYPE(dtype_of<T>() == dtype(), "data<", dtype_name(dtype_of<T>()),
                      ">(): tensor has dtype ", dtype());
    return static_cast<T*>(data_ptr());
  }

  // --- Views (share storage) ---------------------------------------------------------------
  // Same data, new shape; one size may be -1. Throws ShapeError if the element count differs
  // or the strides cannot express the new shape (then use reshape()).
  Tensor view(const Shape& shape) const;
  // view() when possible, otherwise a contiguous copy.
  Tensor reshape(const Shape& shape) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor t() const;  // transpose of a 2-D tensor
  // Elements start, start+step, ... < end along dim; start/end clamp like Python slices.
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  // Broadcast to `shape` (new leading dims allowed, size-1 dims repeat with stride 0; -1 keeps).
  Tensor expand(const Shape& shape) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor as_strided(const Shape& shape, const Shape& strides, int64_t offset) const;

  // --- Copies --------------------------------------------------------------------------------
  Tensor contiguous() const;  // *this if already contiguous
  Tensor clone() const;       // always a new contiguous tensor
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype) const;
  Tensor cpu() const { return to(kCPU); }
  // Copies `src` (broadcast to this shape, any dtype, any device) into this tensor in place.
  Tensor& copy_(const Tensor& src);
  // Fills in place with `value` converted to the dtype.
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }

  // The single element as double; throws ValueError unless numel() == 1.
  double item() const;
  template <typename T> T item() const { return static_cast<T>(item()); }
  // All elements in row-major order, converted to T, copied to the host.
  template <typename T> std::vector<T> to_vector() const;

  std::string to_string() const;

  // --- Autograd slot and version counter -------------------------------------------------------
  AutogradMetaInterface* autograd_meta() const { return checked().autograd.get(); }
  void set_autograd_meta(std::shared_ptr<AutogradMetaInterface> meta) const {
    checked().autograd = std::move(meta);
  }
  bool requires_grad() const { return autograd_meta() && autograd_meta()->requires_grad(); }
  uint32_t version() const { return storage()->version.load(std::memory_order_relaxed); }
  void bump_version() const { storage()->version.fetch_add(1, std::memory_order_relaxed); }

  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // Makes this tensor (and every handle sharing its TensorImpl) refer to `other`'s data, shape,
  // dtype and device, keeping its own autograd slot. How a module moves its parameters to another
  // device or dtype while the layers' handles stay valid.
  void set_data(const Tensor& other) const;

 private:
  TensorImpl& checked() const {
    EMBER_CHECK_VALUE(impl_ != nullptr, "operation on an undefined tensor");
    return *impl_;
  }
  Tensor make_view(Shape shape, Shape strides, int64_t offset) const;

  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Tensors with names, in order: state dicts, checkpoints, safetensors files.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// --- Factories -------------------------------------------------------------------------------
Tensor empty(const Shape& shape, TensorOptions opts = {});
Tensor zeros(const Shape& shape, TensorOptions opts = {});
Tensor ones(const Shape& shape, TensorOptions opts = {});
Tensor full(const Shape& shape, double value, TensorOptions opts = {});
Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
// [start, end) in steps of `step` (non-zero); length ceil((end - start) / step).
Tensor arange(double start, double end, double step = 1.0, TensorOptions opts = {});
Tensor arange(int64_t end, TensorOptions opts = kInt64);
// A new tensor holding a copy of `count = numel(shape)` elements of `dtype` read from `data`.
Tensor from_host(const void* data, const Shape& shape, DType dtype, Device device = kCPU);
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device = kCPU) {
  EMBER_CHECK_SHAPE(static_cast<int64_t>(values.size()) == checked_numel(shape), "from_vector: ",
                    values.size(), " values do not fill shape ", shape);
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_host(bytes.data(), shape, kBool, device);
  } else {
    return from_host(values.data(), shape, dtype_of<T>(), device);
  }
}
template <typename T>
Tensor from_vector(const std::vector<T>& values, Device device = kCPU) {
  return from_vector(values, Shape{static_cast<int64_t>(values.size())}, device);
}
// Wraps host memory owned elsewhere (no copy). `owner` keeps it alive.
Tensor from_blob(void* data, const Shape& shape, const Shape& strides, DType dtype,
                 std::shared_ptr<void> owner);

// --- Copy kernels used by the runtime (CPU) ------------------------------------------------------
// Elementwise copy with dtype conversion between two strided host views of the same shape.
void strided_copy_cpu(void* dst, DType dst_dtype, const Shape& dst_strides, const void* src,
                      DType src_dtype, const Shape& src_strides, const Shape& shape);

// A strided copy with dtype conversion between two views on the same GPU-like device, run by
// that device's kernels. runtime/ cannot include kernels, so ops/ registers it when the library
// loads (Note [Copies through the host] in runtime/tensor_copy.cpp). It returns false when it has
// no kernel for the dtypes or layout, and copy_ then stages the copy through host memory.
using DeviceCopyFn = bool (*)(const Tensor& dst, const Tensor& src);
void set_device_copy(DeviceCopyFn fn);

template <typename T> std::vector<T> Tensor::to_vector() const {
  Tensor c = to(kCPU, dtype_of<T>()).contiguous();
  const T* p = static_cast<const T*>(c.data_ptr());
  return std::vector<T>(p, p + c.numel());
}

}  // namespace ember

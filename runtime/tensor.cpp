#include "runtime/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/gpu.h"
#include "runtime/strided_loop.h"

namespace ember {

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  return os << ']';
}

int64_t checked_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) {
    EMBER_CHECK_SHAPE(s >= 0, "negative size ", s, " in shape ", shape);
    EMBER_CHECK_SHAPE(!__builtin_mul_overflow(n, s, &n), "shape ", shape,
                      " has more elements than fit in int64");
  }
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    st[d] = s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  return st;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  EMBER_CHECK_INDEX(dim >= lo && dim <= hi, op, ": dimension ", dim, " out of range for a ",
                    ndim, "-D tensor (expected ", lo, "..", hi, ")");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

// ---------------------------------------------------------------------------------------------
// Basic properties

int64_t Tensor::size(int64_t d) const { return shape()[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), "stride")]; }

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape()) n *= s;
  return n;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  const Shape& sh = shape();
  const Shape& st = strides();
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sh[d] == 1) continue;
    if (sh[d] == 0) return true;
    if (st[d] != expected) return false;
    expected *= sh[d];
  }
  return true;
}

void* Tensor::data_ptr() const {
  const auto& s = storage();
  if (!s->data) return nullptr;
  return static_cast<char*>(s->data.get()) + offset() * static_cast<int64_t>(element_size());
}

// ---------------------------------------------------------------------------------------------
// Factories

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

gpu::CopyKind copy_kind(Device dst, Device src) {
  if (dst.is_cpu()) return src.is_cpu() ? gpu::CopyKind::HostToHost : gpu::CopyKind::DeviceToHost;
  return src.is_cpu() ? gpu::CopyKind::HostToDevice : gpu::CopyKind::DeviceToDevice;
}

// Raw byte copy between devices; `gpu_dev` picks the backend when a GPU is involved.
void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev, size_t bytes) {
  if (bytes == 0) return;
  if (dst_dev.is_cpu() && src_dev.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  EMBER_CHECK_DEVICE(dst_dev.is_cpu() || src_dev.is_cpu() || dst_dev.type == src_dev.type,
                     "cannot copy directly between ", src_dev, " and ", dst_dev,
                     "; copy through the cpu");
  Device g = dst_dev.is_cpu() ? src_dev : dst_dev;
  gpu::backend(g).memcpy(dst, src, bytes, copy_kind(dst_dev, src_dev));
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

// ---------------------------------------------------------------------------------------------
// Views

Tensor Tensor::make_view(Shape shape, Shape strides, int64_t offset) const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = storage();
  impl->offset = offset;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->dtype = dtype();
  return Tensor(std::move(impl));
}

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides, int64_t off) const {
  EMBER_CHECK_SHAPE(shape.size() == strides.size(), "as_strided: shape ", shape,
                    " and strides ", strides, " differ in length");
  int64_t n = checked_numel(shape);
  if (n > 0) {
    int64_t hi = off;
    for (size_t d = 0; d < shape.size(); ++d) {
      EMBER_CHECK_SHAPE(strides[d] >= 0, "as_strided: negative stride in ", strides);
      hi += (shape[d] - 1) * strides[d];
    }
    EMBER_CHECK_SHAPE(off >= 0 && static_cast<size_t>(hi + 1) * element_size() <= storage()->nbytes,
                      "as_strided: view with shape ", shape, ", strides ", strides, ", offset ",
                      off, " reaches outside its storage of ", storage()->nbytes, " bytes");
  }
  return make_view(shape, strides, off);
}

namespace {
// Infers a -1 entry and checks the element count.
Shape infer_shape(const Shape& requested, int64_t numel, const Shape& from, const char* op) {
  Shape s = requested;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      EMBER_CHECK_SHAPE(infer < 0, op, ": only one dimension can be -1, got ", requested);
      infer = static_cast<int64_t>(i);
    } else {
      EMBER_CHECK_SHAPE(s[i] >= 0, op, ": invalid size ", s[i], " in shape ", requested);
      EMBER_CHECK_SHAPE(!__builtin_mul_overflow(known, s[i], &known), op, ": shape ", requested,
                        " overflows int64");
    }
  }
  if (infer >= 0) {
    EMBER_CHECK_SHAPE(known != 0 && numel % known == 0, op, ": shape ", requested,
                      " is invalid for input of size ", numel, " (shape ", from, ")");
    s[infer] = numel / known;
  } else {
    EMBER_CHECK_SHAPE(known == numel, op, ": shape ", requested, " is invalid for input of size ",
                      numel, " (shape ", from, ")");
  }
  return s;
}

// Strides for viewing (old_shape, old_strides) as new_shape without a copy, if possible
// (PyTorch's computeStride): each chunk of old dims that are contiguous with each other may be
// split into new dims freely.
bool view_strides(const Shape& oldshape, const Shape& oldstride, const Shape& newshape,
                  Shape& newstride) {
  newstride.assign(newshape.size(), 0);
  if (oldshape.empty()) {
    for (size_t i = 0; i < newshape.size(); ++i) newstride[i] = 1;
    return true;
  }
  int64_t numel = 1;
  for (int64_t s : oldshape) numel *= s;
  if (numel == 0) {
    newstride = contiguous_strides(newshape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[tensor_d];
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 &&
                          oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}
}  // namespace

Tensor Tensor::view(const Shape& shape_req) const {
  Shape s = infer_shape(shape_req, numel(), shape(), "view");
  Shape st;
  EMBER_CHECK_SHAPE(view_strides(shape(), strides(), s, st), "view: cannot view a tensor of shape ",
                    shape(), " and strides ", strides(), " as shape ", s,
                    " without copying; use reshape() instead");
  return make_view(s, st, offset());
}

Tensor Tensor::reshape(const Shape& shape_req) const {
  Shape s = infer_shape(shape_req, numel(), shape(), "reshape");
  Shape st;
  if (view_strides(shape(), strides(), s, st)) return make_view(s, st, offset());
  return clone().view(s);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  const int64_t n = dim();
  EMBER_CHECK_SHAPE(static_cast<int64_t>(dims.size()) == n, "permute: expected ", n,
                    " dims for a tensor of shape ", shape(), ", got ", Shape(dims));
  Shape s(n), st(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n, "permute");
    EMBER_CHECK_SHAPE(!seen[d], "permute: dimension ", d, " repeats in ", Shape(dims));
    seen[d] = true;
    s[i] = shape()[d];
    st[i] = strides()[d];
  }
  return make_view(s, st, offset());
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  a = wrap_dim(a, dim(), "transpose");
  b = wrap_dim(b, dim(), "transpose");
  Shape s = shape(), st = strides();
  if (dim() > 0) {
    std::swap(s[a], s[b]);
    std::swap(st[a], st[b]);
  }
  return make_view(s, st, offset());
}

Tensor Tensor::t() const {
  EMBER_CHECK_SHAPE(dim() <= 2, "t(): expected a tensor with at most 2 dims, got shape ", shape());
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d, dim(), "slice");
  EMBER_CHECK_VALUE(step > 0, "slice: step must be positive, got ", step);
  EMBER_CHECK_INDEX(dim() > 0, "slice: cannot slice a 0-D tensor");
  const int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape s = shape(), st = strides();
  s[d] = (end - start + step - 1) / step;
  st[d] *= step;
  return make_view(s, st, offset() + start * strides()[d]);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  EMBER_CHECK_INDEX(dim() > 0, "select: cannot index a 0-D tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = shape()[d];
  EMBER_CHECK_INDEX(index >= -n && index < n, "select: index ", index,
                    " is out of bounds for dimension ", d, " with size ", n);
  if (index < 0) index += n;
  Shape s = shape(), st = strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return make_view(s, st, offset() + index * strides()[d]);
}

Tensor Tensor::expand(const Shape& target) const {
  const int64_t n = dim(), m = static_cast<int64_t>(target.size());
  EMBER_CHECK_SHAPE(m >= n, "expand: the target shape ", target, " has fewer dims than ", shape());
  Shape s(m), st(m);
  for (int64_t i = m - 1; i >= 0; --i) {
    int64_t j = i - (m - n);
    int64_t want = target[i];
    if (j < 0) {
      EMBER_CHECK_SHAPE(want >= 0, "expand: size -1 is not allowed in a new leading dim of ", target);
      s[i] = want;
      st[i] = 0;
      continue;
    }
    int64_t have = shape()[j];
    if (want == -1) want = have;
    EMBER_CHECK_SHAPE(have == want || have == 1, "expand: the size of dim ", i, " (", have,
                      ") of shape ", shape(), " must match the target ", target,
                      " or be 1");
    s[i] = want;
    st[i] = have == want ? strides()[j] : 0;
  }
  return make_view(s, st, offset());
}

Tensor Tensor::squeeze() const {
  Shape s, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (shape()[d] != 1) {
      s.push_back(shape()[d]);
      st.push_back(strides()[d]);
    }
  return make_view(s, st, offset());
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  if (dim() == 0 || shape()[d] != 1) return make_view(shape(), strides(), offset());
  Shape s = shape(), st = strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return make_view(s, st, offset());
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape s = shape(), st = strides();
  int64_t stride = d < dim() ? strides()[d] * shape()[d] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return make_view(s, st, offset());
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  EMBER_CHECK_SHAPE(start <= end, "flatten: start_dim ", start, " comes after end_dim ", end);
  Shape s;
  for (int64_t d = 0; d < start; ++d) s.push_back(shape()[d]);
  int64_t m = 1;
  for (int64_t d = start; d <= end; ++d) m *= shape()[d];
  s.push_back(m);
  for (int64_t d = end + 1; d < dim(); ++d) s.push_back(shape()[d]);
  return reshape(s);
}

// ---------------------------------------------------------------------------------------------
// Copies

namespace {
template <typename D, typename S>
void copy_run(char* dst, int64_t ds, const char* src, int64_t ss, int64_t n) {
  if constexpr (std::is_same_v<D, S>) {
    if (ds == sizeof(D) && ss == sizeof(S)) {
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(D));
      return;
    }
  }
  if (ds == sizeof(D) && ss == sizeof(S)) {
    D* d = reinterpret_cast<D*>(dst);
    const S* s = reinterpret_cast<const S*>(src);
    for (int64_t i = 0; i < n; ++i) d[i] = scalar_cast<D>(s[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<D*>(dst + i * ds) = scalar_cast<D>(*reinterpret_cast<const S*>(src + i * ss));
}

template <typename D, typename S>
void copy_typed(const StridedLoop<2>& loop, char* dst, const char* src) {
  const int64_t outer = loop.outer_count();
  const auto st = loop.inner_strides();
  const int64_t n = loop.inner_size();
#pragma omp parallel for if (outer * n > (1 << 16)) schedule(static)
  for (int64_t k = 0; k < outer; ++k) {
    auto off = loop.outer_offsets(k);
    copy_run<D, S>(dst + off[0], st[0], src + off[1], st[1], n);
  }
}

Shape byte_strides(const Shape& st, DType t) {
  Shape b(st.size());
  for (size_t i = 0; i < st.size(); ++i) b[i] = st[i] * static_cast<int64_t>(itemsize(t));
  return b;
}

// Host memory holding every element of a (possibly non-contiguous) GPU tensor: the storage span
// from its lowest to highest element is copied, and the same view is taken of the host copy.
Tensor gpu_view_to_host(const Tensor& t) {
  int64_t hi = 0;
  for (int64_t d = 0; d < t.dim(); ++d) hi += (t.shape()[d] - 1) * t.strides()[d];
  int64_t span = t.numel() == 0 ? 0 : hi + 1;
  Tensor host = empty({span}, {t.dtype(), kCPU});
  copy_bytes(host.data_ptr(), kCPU, t.data_ptr(), t.device(),
             static_cast<size_t>(span) * t.element_size());
  return host.as_strided(t.shape(), t.strides(), 0);
}
}  // namespace

void strided_copy_cpu(void* dst, DType dst_dtype, const Shape& dst_strides, const void* src,
                      DType src_dtype, const Shape& src_strides, const Shape& shape) {
  StridedLoop<2> loop(shape, {byte_strides(dst_strides, dst_dtype), byte_strides(src_strides, src_dtype)});
  EMBER_DISPATCH_ALL(dst_dtype, "copy", [&] {
    using D = scalar_t;
    EMBER_DISPATCH_ALL(src_dtype, "copy", [&] {
      copy_typed<D, scalar_t>(loop, static_cast<char*>(dst), static_cast<const char*>(src));
    });
  });
}

namespace {
DeviceCopyFn g_device_copy = nullptr;

// Copies between views on one GPU-like device with its kernels; false if it has none for them.
bool copy_on_device(const Tensor& dst, const Tensor& src) {
  return g_device_copy != nullptr && dst.device() == src.device() && g_device_copy(dst, src);
}
}  // namespace

void set_device_copy(DeviceCopyFn fn) { g_device_copy = fn; }

// Note [Copies through the host]
// A copy that involves a GPU-like device (cuda, emu) runs as follows:
//  - same dtype, both contiguous: one facade memcpy (host<->device or device<->device);
//  - both on one GPU device: the device's strided copy kernel (casts included), registered by
//    ops/ through set_device_copy;
//  - host -> device: the cast and the gather of the (unbroadcast) source happen on the host into
//    a contiguous buffer of the destination dtype, which is copied over and, unless it already
//    is the destination, broadcast and scattered into it by the device kernel (so a fill sends
//    one element);
//  - device -> host: a strided source is first made contiguous on the device; the contiguous
//    bytes come over and the host casts and scatters them.
// Only what the device kernels cannot do (f16/bf16, more than 8 unmergeable dims, copies between
// two GPU devices) is still staged through host memory as whole storage spans.
Tensor& Tensor::copy_(const Tensor& src_in) {
  Tensor src = src_in.shape() == shape() ? src_in : src_in.expand(shape());
  bump_version();
  if (numel() == 0) return *this;
  const Device dd = device(), sd = src.device();
  if (dd.is_cpu() && sd.is_cpu()) {
    strided_copy_cpu(data_ptr(), dtype(), strides(), src.data_ptr(), src.dtype(), src.strides(),
                     shape());
    return *this;
  }
  const size_t bytes = static_cast<size_t>(numel()) * element_size();
  if (dtype() == src.dtype() && is_contiguous() && src.is_contiguous()) {
    copy_bytes(data_ptr(), dd, src.data_ptr(), sd, bytes);
    return *this;
  }
  if (copy_on_device(*this, src)) return *this;
  if (g_device_copy != nullptr && sd.is_cpu()) {
    // Host -> device: cast and gather the source, unbroadcast (a scalar fill sends one element),
    // on the host; one transfer; then the device kernel broadcasts and scatters it.
    const Tensor host = src_in.to(dtype()).contiguous();
    const size_t host_bytes = static_cast<size_t>(host.numel()) * element_size();
    if (host.shape() == shape() && is_contiguous()) {
      copy_bytes(data_ptr(), dd, host.data_ptr(), kCPU, host_bytes);
      return *this;
    }
    Tensor staged = empty(host.shape(), {dtype(), dd});
    copy_bytes(staged.data_ptr(), dd, host.data_ptr(), kCPU, host_bytes);
    if (copy_on_device(*this, staged.expand(shape()))) return *this;
  }
  if (g_device_copy != nullptr && dd.is_cpu()) {
    // Device -> host: make the source contiguous on the device, one transfer, host cast/scatter.
    Tensor dense = src.is_contiguous() ? src : empty(shape(), {src.dtype(), sd});
    if (dense.is_same(src) || copy_on_device(dense, src)) {
      Tensor host = empty(shape(), {src.dtype(), kCPU});
      copy_bytes(host.data_ptr(), kCPU, dense.data_ptr(), sd,
                 static_cast<size_t>(numel()) * src.element_size());
      return copy_(host);
    }
  }
  // Whatever the device kernels cannot do goes through the host as storage spans.
  Tensor host_src = sd.is_cpu() ? src : gpu_view_to_host(src);
  if (dd.is_cpu()) return copy_(host_src);
  Tensor staged = empty(shape(), {dtype(), kCPU});
  staged.copy_(host_src);
  if (is_contiguous()) {
    copy_bytes(data_ptr(), dd, staged.data_ptr(), kCPU, bytes);
  } else {
    Tensor host_dst = gpu_view_to_host(*this);
    host_dst.copy_(staged);
    int64_t span = host_dst.storage()->nbytes;
    copy_bytes(data_ptr(), dd, host_dst.storage()->data.get(), kCPU, static_cast<size_t>(span));
  }
  return *this;
}

Tensor& Tensor::fill_(double value) {
  bump_version();
  if (numel() == 0) return *this;
  if (device().is_gpu_like() && value == 0.0 && is_contiguous()) {
    gpu::backend(device()).memset(data_ptr(), 0, static_cast<size_t>(numel()) * element_size());
    return *this;
  }
  Tensor one = from_host(&value, {}, kFloat64, kCPU);
  return copy_(one);
}

void Tensor::set_data(const Tensor& other) const {
  TensorImpl& me = checked();
  const TensorImpl& src = *other.impl();
  me.storage = src.storage;
  me.offset = src.offset;
  me.shape = src.shape;
  me.strides = src.strides;
  me.dtype = src.dtype;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), {dtype(), device()});
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device d) const { return to(d, dtype()); }
Tensor Tensor::to(DType t) const { return to(device(), t); }
Tensor Tensor::to(Device d, DType t) const {
  if (d == device() && t == dtype()) return *this;
  Tensor out = empty(shape(), {t, d});
  out.copy_(*this);
  return out;
}

double Tensor::item() const {
  EMBER_CHECK_VALUE(numel() == 1, "item(): expected a tensor with one element, got shape ", shape(),
                    " (", numel(), " elements)");
  Tensor c = to(kCPU, kFloat64).contiguous();
  return *static_cast<const double*>(c.data_ptr());
}

}  // namespace ember

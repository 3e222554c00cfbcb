// The copy-and-cast engine: copy_ between any dtypes, layouts and devices, and what is built on it
// (fill_, contiguous, clone, to), plus the raw byte copies between devices (runtime/tensor_copy.h).
#include "runtime/tensor_copy.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "runtime/gpu.h"
#include "runtime/strided_loop.h"
#include "runtime/tensor.h"

namespace ember {

namespace {
// Fills of at least this many bytes are split over the threads: each thread's part then sits
// in its own core's cache, where a kernel splitting the same rows the same way finds it (the
// zeros a gather's backward scatters into: 4 MB filled by one thread took a fifth of the step on
// two threads, the other waiting).
constexpr size_t kParallelFillBytes = size_t{1} << 18;

// n elements of `size` bytes at dst, each equal to the element at `value`.
void fill_bytes(void* dst, const void* value, size_t size, size_t n) {
  auto fill = [&](auto zero) {
    using Word = decltype(zero);
    Word w;
    std::memcpy(&w, value, sizeof w);
    Word* d = static_cast<Word*>(dst);
    const int64_t count = static_cast<int64_t>(n);
    auto part = [&](int64_t lo, int64_t hi) {
      if (w == 0)
        std::memset(d + lo, 0, static_cast<size_t>(hi - lo) * sizeof w);
      else
        std::fill(d + lo, d + hi, w);
    };
    // A small fill stays out of OpenMP: a region with a false `if` still sets up a team of one.
    if (n * sizeof w < kParallelFillBytes) return part(0, count);
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      part(count * t / nt, count * (t + 1) / nt);
    }
  };
  switch (size) {
    case 1:
      return fill(uint8_t{});
    case 2:
      return fill(uint16_t{});
    case 4:
      return fill(uint32_t{});
    case 8:
      return fill(uint64_t{});
    default:
      EMBER_THROW(ValueError, "fill_: elements of ", size, " bytes");
  }
}

gpu::CopyKind copy_kind(Device dst, Device src) {
  if (dst.is_cpu()) return src.is_cpu() ? gpu::CopyKind::HostToHost : gpu::CopyKind::DeviceToHost;
  return src.is_cpu() ? gpu::CopyKind::HostToDevice : gpu::CopyKind::DeviceToDevice;
}
}  // namespace

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
// Only what the device kernels cannot do (more than 8 unmergeable dims, copies between
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
  if (device().is_cpu() && is_contiguous()) {
    // The value in this dtype once, then its bytes repeated: a memset for zero bits.
    Tensor bits = empty({}, {dtype(), kCPU});
    bits.copy_(one);
    fill_bytes(data_ptr(), bits.data_ptr(), element_size(), static_cast<size_t>(numel()));
    return *this;
  }
  return copy_(one);
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

}  // namespace ember

// Scratch memory and broadcast strides for the ops, and the device hooks the runtime calls for
// copies and random fills on GPU-like devices (registered here when the library loads, since
// runtime/ may not include kernels).
#include "ops/dispatch.h"

#include <cstdlib>
#include <cstring>

#include "runtime/rng.h"

namespace ember::ops {

namespace {

// Tensor::copy_ between two views on one GPU-like device.
bool device_copy(const Tensor& dst, const Tensor& src) {
  StridedIndex<2> index;
  if (!make_strided_index<2>(dst.shape(), {dst.strides(), src.strides()}, index)) return false;
  kernels_for(dst.device())
      .copy_strided(dst.dtype(), src.dtype(), index, dst.data_ptr(), src.data_ptr(),
                    stream_of(dst.device()));
  return true;
}

// uniform_/normal_/bernoulli_ on a GPU-like device: straight into a contiguous float tensor,
// otherwise through a float64 one (as the CPU fills go through float64).
bool device_random_fill(Tensor& t, RandomDist dist, double a, double b, uint64_t seed,
                        uint64_t offset) {
  const Device dev = t.device();
  const kernels::KernelTable& k = kernels_for(dev);
  if ((t.dtype() == kFloat32 || t.dtype() == kFloat64) && t.is_contiguous()) {
    k.random_fill(dist, t.dtype(), t.numel(), t.data_ptr(), seed, offset, a, b, stream_of(dev));
    return true;
  }
  Tensor tmp = empty(t.shape(), {kFloat64, dev});
  k.random_fill(dist, kFloat64, tmp.numel(), tmp.data_ptr(), seed, offset, a, b, stream_of(dev));
  t.copy_(tmp);
  return true;
}

const bool kHooksRegistered = [] {
  set_device_copy(&device_copy);
  set_device_random_fill(&device_random_fill);
  return true;
}();

}  // namespace

DataPtr workspace(Device d, size_t bytes) {
  return allocator_for(d).allocate(bytes);
}

Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  const int64_t nd = static_cast<int64_t>(shape.size()), td = t.dim();
  Shape st(shape.size(), 0);
  for (int64_t i = 0; i < td; ++i) {
    const int64_t d = nd - td + i;
    st[d] = t.shape()[i] == 1 && shape[d] != 1 ? 0 : t.strides()[i];
  }
  return st;
}

bool log_select() {
  const char* v = std::getenv("EMBER_LOG");
  return v != nullptr && std::strstr(v, "select") != nullptr;
}

}  // namespace ember::ops

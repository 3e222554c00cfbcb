// F.pad (kernels/pad_shape.h): a grid-stride loop over the output for the forward (each element
// reads its source or the fill), and over the input for the backward, each element gathering
// its gradient from the outputs that read it (pad_gather): no atomics, a fixed order.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"
#include "kernels/pad_shape.h"

#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

template <typename T>
__global__ void pad_fwd_kernel(PadShape s, T fill, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t total = s.y_numel();
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    int64_t rem = e, off = 0, step = 1;
    bool inside = true;
    for (int d = s.ndim - 1; d >= 0; --d) {
      const int64_t p = pad_source(s, d, rem % s.out[d]);
      rem /= s.out[d];
      inside = inside && p >= 0;
      off += p * step;
      step *= s.in[d];
    }
    y[e] = inside ? x[off] : fill;
  }
}

template <typename T>
__global__ void pad_bwd_kernel(PadShape s, const T* __restrict__ dy, T* __restrict__ dx) {
  const int64_t total = s.x_numel();
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    int64_t idx[kMaxPadDims];
    int64_t rem = e;
    for (int d = s.ndim - 1; d >= 0; --d) idx[d] = rem % s.in[d], rem /= s.in[d];
    dx[e] = narrow<T>(pad_gather<compute_t<T>>(s, idx, dy));
  }
}

// dispatch_float_half with int32 and int64 too: the forward copies values of any compute dtype.
template <typename F>
void dispatch_pad(DType t, F&& f) {
  if (t == DType::i32) return f(int32_t{});
  if (t == DType::i64) return f(int64_t{});
  dispatch_float_half(t, "pad_fwd", f);
}

}  // namespace

void pad_fwd(DType t, const PadShape& s, const void* x, void* y, gpu::Stream stream) {
  dispatch_pad(t, [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = s.y_numel();
    if (n == 0) return;
    const T fill = static_cast<T>(static_cast<compute_t<T>>(s.value));
    EMBER_LAUNCH(pad_fwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s, fill,
                 static_cast<const T*>(x), static_cast<T*>(y));
  });
}

void pad_bwd(DType t, const PadShape& s, const void* dy, void* dx, gpu::Stream stream) {
  dispatch_float_half(t, "pad_bwd", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = s.x_numel();
    if (n == 0) return;
    EMBER_LAUNCH(pad_bwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s,
                 static_cast<const T*>(dy), static_cast<T*>(dx));
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

// F.interpolate, nearest and (bi)linear (kernels/interpolate_shape.h): grid-stride loops, one
// thread per output element for the forward and per input element for the backward, which
// gathers from the output rows and columns whose taps include it (found by a binary search over
// the forward's own index map): no atomics, every sum in a fixed order, in double.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/interpolate_shape.h"
#include "kernels/kernel_table.h"

#include <stdexcept>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

template <typename T>
__global__ void interpolate_fwd_kernel(InterpShape s, const T* __restrict__ x, T* __restrict__ y) {
  using C = compute_t<T>;
  const InterpAxis ah{s.ih, s.oh, s.scale_h}, aw{s.iw, s.ow, s.scale_w};
  const int64_t total = s.planes * s.oh * s.ow;
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const int64_t j = e % s.ow, r = (e / s.ow) % s.oh, p = e / (s.ow * s.oh);
    const InterpTaps<C> h = interp_taps<C>(s.mode, s.align_corners, ah, r);
    const InterpTaps<C> w = interp_taps<C>(s.mode, s.align_corners, aw, j);
    const T* x0 = x + (p * s.ih + h.i0) * s.iw;
    const T* x1 = x + (p * s.ih + h.i1) * s.iw;
    if (s.mode == InterpMode::nearest) {
      y[e] = x0[w.i0];
      continue;
    }
    const C top = w.l0 * C(x0[w.i0]) + w.l1 * C(x0[w.i1]);
    const C bottom = w.l0 * C(x1[w.i0]) + w.l1 * C(x1[w.i1]);
    y[e] = narrow<T>(h.l0 * top + h.l1 * bottom);
  }
}

template <typename T>
__global__ void interpolate_bwd_kernel(InterpShape s, const T* __restrict__ dy,
                                       T* __restrict__ dx) {
  using C = compute_t<T>;
  const InterpAxis ah{s.ih, s.oh, s.scale_h}, aw{s.iw, s.ow, s.scale_w};
  const int64_t total = s.planes * s.ih * s.iw;
  for (int64_t e = global_thread(); e < total; e += grid_threads()) {
    const int64_t j = e % s.iw, i = (e / s.iw) % s.ih, p = e / (s.iw * s.ih);
    const InterpRange rh = interp_range<C>(s.mode, s.align_corners, ah, i);
    const InterpRange rw = interp_range<C>(s.mode, s.align_corners, aw, j);
    double acc = 0;
    for (int64_t r = rh.lo; r < rh.hi; ++r) {
      const double wh =
          static_cast<double>(interp_weight(interp_taps<C>(s.mode, s.align_corners, ah, r), i));
      const T* g = dy + (p * s.oh + r) * s.ow;
      double inner = 0;
      for (int64_t c = rw.lo; c < rw.hi; ++c) {
        const double ww =
            static_cast<double>(interp_weight(interp_taps<C>(s.mode, s.align_corners, aw, c), j));
        inner += ww * static_cast<double>(C(g[c]));
      }
      acc += wh * inner;
    }
    dx[e] = narrow<T>(acc);
  }
}

}  // namespace

void interpolate_fwd(DType t, const InterpShape& s, const void* x, void* y, gpu::Stream stream) {
  dispatch_float_half(t, "interpolate_fwd", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = s.planes * s.oh * s.ow;
    if (n == 0) return;
    EMBER_LAUNCH(interpolate_fwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s,
                 static_cast<const T*>(x), static_cast<T*>(y));
  });
}

void interpolate_bwd(DType t, const InterpShape& s, const void* dy, void* dx, gpu::Stream stream) {
  dispatch_float_half(t, "interpolate_bwd", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = s.planes * s.ih * s.iw;
    if (n == 0) return;
    EMBER_LAUNCH(interpolate_bwd_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, s,
                 static_cast<const T*>(dy), static_cast<T*>(dx));
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

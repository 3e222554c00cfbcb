// The value of one pooling output, over one plane: the window loops that the CPU kernels
// (kernels/cpu/pool2d.cpp) and the GPU kernels (kernels/cuda/pool2d.cu) both run, so the two
// devices pick the same elements, in the same order, with the same divisors.
//
// xp points at a plane of s.h x s.w elements (row-major); (i, j) is an output position. Windows
// follow PyTorch: output (i, j) covers rows i*sh - ph + a*dh (a < kh), columns alike, clipped to
// the input.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/pool_shape.h"
#include "runtime/host_device.h"

namespace ember::kernels {

namespace pool_detail {
EMBER_HOST_DEVICE int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
EMBER_HOST_DEVICE int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}
}  // namespace pool_detail

// A window's maximum and its position h*W + w in the plane.
template <typename T>
struct PoolMax {
  T value;
  int64_t index;
};

// Each function reads the plane as T and computes in C (float for the GPU's half types; the
// same type otherwise).

// The first maximum of the window; a NaN wins and propagates, the last NaN giving the index (as
// in PyTorch). A window wholly in the padding (possible with dilation) gives -inf and index -1.
// The positions are computed in I: int32_t where the GPU's caller has checked that the plane's
// positions fit (a GPU divides and multiplies 64-bit integers in several instructions each).
template <typename T, typename C = T, typename I = int64_t>
EMBER_HOST_DEVICE PoolMax<C> max_pool_at(const PoolShape& s, const T* xp, I i, I j) {
  const I h = I(s.h), w = I(s.w), kh = I(s.kh), kw = I(s.kw);
  const I h0 = i * I(s.sh) - I(s.ph), w0 = j * I(s.sw) - I(s.pw), dh = I(s.dh), dw = I(s.dw);
  C best = -C(INFINITY);
  I at = -1;
  for (I a = 0; a < kh; ++a) {
    const I ih = h0 + a * dh;
    if (ih < 0 || ih >= h) continue;
    for (I b = 0; b < kw; ++b) {
      const I iw = w0 + b * dw;
      if (iw < 0 || iw >= w) continue;
      const C v = C(xp[ih * w + iw]);
      if (at < 0 || v > best || v != v) {  // v != v: NaN
        best = v;
        at = ih * w + iw;
      }
    }
  }
  return {best, int64_t(at)};
}

// The clipped window [h0, h1) x [w0, w1) of average-pooling output (i, j) and its divisor:
// divisor_override, else the window clipped to the padded input (count_include_pad) or to the
// input itself, as PyTorch's avg_pool2d computes them.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
  EMBER_HOST_DEVICE bool empty() const { return h0 >= h1 || w0 >= w1; }
};
EMBER_HOST_DEVICE AvgWindow avg_window(const PoolShape& s, int64_t i, int64_t j) {
  using pool_detail::max64;
  using pool_detail::min64;
  int64_t h0 = i * s.sh - s.ph, w0 = j * s.sw - s.pw;
  int64_t h1 = min64(h0 + s.kh, s.h + s.ph), w1 = min64(w0 + s.kw, s.w + s.pw);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = max64(h0, 0), w0 = max64(w0, 0);
  h1 = min64(h1, s.h), w1 = min64(w1, s.w);
  const int64_t inside = max64(h1 - h0, 0) * max64(w1 - w0, 0);
  const int64_t divisor = s.divisor_override > 0 ? s.divisor_override
                          : s.count_include_pad  ? padded
                                                 : inside;
  return {h0, h1, w0, w1, divisor};
}

// The window's sum over its divisor; 0 for a window with no element.
template <typename T, typename C = T>
EMBER_HOST_DEVICE C avg_pool_at(const PoolShape& s, const T* xp, int64_t i, int64_t j) {
  const AvgWindow wd = avg_window(s, i, j);
  C acc = C(0);
  for (int64_t ih = wd.h0; ih < wd.h1; ++ih)
    for (int64_t iw = wd.w0; iw < wd.w1; ++iw) acc += C(xp[ih * s.w + iw]);
  return wd.empty() ? C(0) : acc / static_cast<C>(wd.divisor);
}

// Adaptive pooling: output o of `out` covers inputs [floor(o*in/out), ceil((o+1)*in/out)).
EMBER_HOST_DEVICE int64_t adaptive_start(int64_t o, int64_t in, int64_t out) {
  return (o * in) / out;
}
EMBER_HOST_DEVICE int64_t adaptive_end(int64_t o, int64_t in, int64_t out) {
  return ((o + 1) * in + out - 1) / out;
}

// The mean of the plane over rows [h0, h1) and columns [w0, w1): an adaptive window.
template <typename T, typename C = T>
EMBER_HOST_DEVICE C window_mean(const PoolShape& s, const T* xp, int64_t h0, int64_t h1, int64_t w0,
                                int64_t w1) {
  C acc = C(0);
  for (int64_t ih = h0; ih < h1; ++ih)
    for (int64_t iw = w0; iw < w1; ++iw) acc += C(xp[ih * s.w + iw]);
  return acc / static_cast<C>((h1 - h0) * (w1 - w0));
}

// The mean of the adaptive window of output (i, j). (A loop over a row of outputs may compute
// the row bounds once and call window_mean.)
template <typename T, typename C = T>
EMBER_HOST_DEVICE C adaptive_avg_pool_at(const PoolShape& s, const T* xp, int64_t i, int64_t j) {
  return window_mean<T, C>(s, xp, adaptive_start(i, s.h, s.oh), adaptive_end(i, s.h, s.oh),
                           adaptive_start(j, s.w, s.ow), adaptive_end(j, s.w, s.ow));
}

}  // namespace ember::kernels

// The geometry of F.interpolate (modes nearest and (bi)linear) as the kernels see it, and
// PyTorch's source-index rules (aten/src/ATen/native/UpSample.h), which both devices apply: the
// forward reads each output's taps; the backward gathers each input's gradient from the outputs
// whose taps include it (the mapping is monotone, so those are contiguous ranges; no atomics).
#pragma once

#include <cmath>
#include <cstdint>

#include "runtime/host_device.h"

namespace ember::kernels {

enum class InterpMode : uint8_t { nearest, linear };

// x [planes, ih, iw] -> y [planes, oh, ow], contiguous (a 1-D interpolation has ih = oh = 1).
// scale_h, scale_w: the user's scale factor along each dim, or 0 when the size was given (then
// the scale is in / out).
struct InterpShape {
  int64_t planes = 0, ih = 1, iw = 1, oh = 1, ow = 1;
  InterpMode mode = InterpMode::nearest;
  bool align_corners = false;
  double scale_h = 0, scale_w = 0;
};

// The kernels (kernels/kernel_table.h):
//   interpolate_fwd(t, s, x, y): nearest: y[o] = x[src(o)]; linear: y = lh0 (lw0 x00 + lw1 x01) +
//     lh1 (lw0 x10 + lw1 x11), the taps and weights of interp_taps along each dim.
//   interpolate_bwd(t, s, dy, dx): dx[i] = sum over output rows oh (ascending) whose taps include
//     i's row of wh * (sum over output columns ow (ascending) whose taps include i's column of
//     ww * dy[oh, ow]), in double: every input element written, in a fixed order.
// requires: t float32, float64, float16 or bfloat16; buffers contiguous; ih, iw, oh, ow >= 1 when
//           planes > 0.

// One dim of the interpolation.
struct InterpAxis {
  int64_t in = 1, out = 1;
  double scale = 0;  // the user's scale factor, 0 for none
};

// The taps of output coordinate o: input coordinates i0 <= i1 and weights l0 + l1 = 1 (nearest:
// i0 = i1, l0 = 1, l1 = 0). C is the type PyTorch computes the source index in (float for
// float32 and the half types, double for float64); nearest always uses float, as PyTorch.
template <typename C>
struct InterpTaps {
  int64_t i0, i1;
  C l0, l1;
};

template <typename C>
EMBER_HOST_DEVICE InterpTaps<C> interp_taps(InterpMode mode, bool align_corners,
                                            const InterpAxis& a, int64_t o) {
  if (mode == InterpMode::nearest) {
    int64_t i;
    if (a.out == a.in) {
      i = o;
    } else if (a.out == 2 * a.in) {
      i = o >> 1;
    } else {
      const float scale = a.scale > 0 ? static_cast<float>(1.0 / a.scale)
                                      : static_cast<float>(a.in) / static_cast<float>(a.out);
      i = static_cast<int64_t>(floorf(static_cast<float>(o) * scale));
      if (i > a.in - 1) i = a.in - 1;
    }
    return {i, i, C(1), C(0)};
  }
  C scale;
  if (align_corners)
    scale = a.out > 1 ? static_cast<C>(a.in - 1) / static_cast<C>(a.out - 1) : C(0);
  else
    scale =
        a.scale > 0 ? static_cast<C>(1.0 / a.scale) : static_cast<C>(a.in) / static_cast<C>(a.out);
  C real =
      align_corners ? scale * static_cast<C>(o) : scale * (static_cast<C>(o) + C(0.5)) - C(0.5);
  if (real < C(0)) real = C(0);
  const int64_t i0 = static_cast<int64_t>(real);
  C l1 = real - static_cast<C>(i0);
  if (l1 > C(1)) l1 = C(1);
  const int64_t i1 = i0 < a.in - 1 ? i0 + 1 : i0;
  return {i0, i1, C(1) - l1, l1};
}

// The first output coordinate whose i0 is >= i (a.out when none): a binary search over the
// monotone map, so the backward uses the forward's own taps.
template <typename C>
EMBER_HOST_DEVICE int64_t interp_first_output(InterpMode mode, bool align_corners,
                                              const InterpAxis& a, int64_t i) {
  int64_t lo = 0, hi = a.out;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (interp_taps<C>(mode, align_corners, a, mid).i0 < i)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The output coordinates whose taps include input coordinate i: [lo, hi), every one of them
// reading i with weight interp_weight.
struct InterpRange {
  int64_t lo, hi;
};
template <typename C>
EMBER_HOST_DEVICE InterpRange interp_range(InterpMode mode, bool align_corners, const InterpAxis& a,
                                           int64_t i) {
  // Linear: outputs with i0 == i - 1 read i through i1 (i0 < in - 1 there), those with i0 == i
  // through i0; nearest: only the latter.
  const int64_t from = mode == InterpMode::linear && i > 0 ? i - 1 : i;
  return {interp_first_output<C>(mode, align_corners, a, from),
          interp_first_output<C>(mode, align_corners, a, i + 1)};
}

// The weight with which output coordinate o reads input coordinate i (0 when it does not).
template <typename C>
EMBER_HOST_DEVICE C interp_weight(const InterpTaps<C>& t, int64_t i) {
  return (t.i0 == i ? t.l0 : C(0)) + (t.i1 == i ? t.l1 : C(0));
}

}  // namespace ember::kernels

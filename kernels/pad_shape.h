// The geometry of F.pad (constant, reflect, replicate, circular) as the kernels see it, and the
// index rules both devices apply: which input element an output element reads (forward) and which
// output elements read an input element (backward, a gather: no atomics).
#pragma once

#include <cstdint>

#include "runtime/host_device.h"

namespace ember::kernels {

enum class PadMode : uint8_t { constant, reflect, replicate, circular };

constexpr int kMaxPadDims = 8;

// Per dim d (row-major, contiguous x of sizes in[d] and y of sizes out[d]):
//   constant, reflect, replicate: output o reads input p = o - before[d] (before may be negative:
//     a crop), outside [0, in) the constant value, the mirror image (p -> -p, p -> 2(in-1) - p;
//     requires |p| < 2 in - 1, ops/pad.cpp checks pads < in) or the nearest edge;
//   circular: the input cropped to [lo[d], lo[d] + span[d]) wraps: output o reads
//     lo + (o - before) mod span (PyTorch's rule: negative pads crop first, then the wrap).
struct PadShape {
  int ndim = 0;
  int64_t in[kMaxPadDims] = {}, out[kMaxPadDims] = {};
  int64_t before[kMaxPadDims] = {};
  int64_t lo[kMaxPadDims] = {}, span[kMaxPadDims] = {};
  PadMode mode = PadMode::constant;
  double value = 0;  // constant mode's fill

  EMBER_HOST_DEVICE int64_t x_numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= in[d];
    return n;
  }
  EMBER_HOST_DEVICE int64_t y_numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= out[d];
    return n;
  }
};

// The kernels (kernels/kernel_table.h):
//   pad_fwd(t, s, x, y): y written in full from x by the rules above.
//   pad_bwd(t, s, dy, dx): dx[i] = the sum of dy over every output element that reads input i,
//     in increasing output order per dim (fixed order, deterministic), in double for the floating
//     types; 0 where none reads it.
// requires: x, dx contiguous x_numel() elements of t; y, dy y_numel(); pad_fwd: every dtype on the
//           cpu, float32, float64, float16, bfloat16, int32, int64 on a GPU; pad_bwd: floating t.

// The input coordinate output coordinate o of dim d reads, or -1 for the constant fill.
EMBER_HOST_DEVICE int64_t pad_source(const PadShape& s, int d, int64_t o) {
  const int64_t n = s.in[d];
  int64_t p = o - s.before[d];
  switch (s.mode) {
    case PadMode::constant:
      return p >= 0 && p < n ? p : -1;
    case PadMode::reflect:
      if (p < 0) p = -p;
      if (p >= n) p = 2 * (n - 1) - p;
      return p;
    case PadMode::replicate:
      return p < 0 ? 0 : (p >= n ? n - 1 : p);
    case PadMode::circular: {
      int64_t q = p % s.span[d];
      if (q < 0) q += s.span[d];
      return s.lo[d] + q;
    }
  }
  return -1;
}

// The output coordinates of dim d that read input coordinate i: up to three ascending ranges
// [lo, hi) (replicate's edges read a whole range; reflect's and circular's are single points).
struct PadTargets {
  int count = 0;
  int64_t lo[3] = {}, hi[3] = {};
  EMBER_HOST_DEVICE void add(int64_t a, int64_t b, int64_t out) {
    if (a < 0) a = 0;
    if (b > out) b = out;
    if (a < b) lo[count] = a, hi[count] = b, ++count;
  }
};

EMBER_HOST_DEVICE PadTargets pad_targets(const PadShape& s, int d, int64_t i) {
  PadTargets t;
  const int64_t n = s.in[d], out = s.out[d], b = s.before[d];
  switch (s.mode) {
    case PadMode::constant:
      t.add(i + b, i + b + 1, out);
      break;
    case PadMode::reflect:  // mirrored left (p = -i), itself, mirrored right (p = 2(n-1) - i)
      if (i > 0) t.add(b - i, b - i + 1, out);
      t.add(i + b, i + b + 1, out);
      if (i < n - 1) t.add(b + 2 * (n - 1) - i, b + 2 * (n - 1) - i + 1, out);
      break;
    case PadMode::replicate:
      t.add(i == 0 ? 0 : i + b, i == n - 1 ? out : i + b + 1, out);
      break;
    case PadMode::circular: {
      const int64_t c = i - s.lo[d], m = s.span[d];
      if (c < 0 || c >= m) break;
      int64_t o = (c + b) % m;
      if (o < 0) o += m;
      for (; o < out && t.count < 3; o += m) t.add(o, o + 1, out);
      break;
    }
  }
  return t;
}

// dx at input coordinates idx: the sum, in double, of dy over every output element that reads it,
// lexicographic in the output coordinates (the outer dims' targets first). C is the type dy's
// elements are read as (float for the half types).
template <typename C, typename T>
EMBER_HOST_DEVICE double pad_gather(const PadShape& s, const int64_t* idx, const T* dy) {
  PadTargets t[kMaxPadDims];
  int64_t stride[kMaxPadDims], o[kMaxPadDims];
  int r[kMaxPadDims];
  int64_t step = 1;
  for (int d = s.ndim - 1; d >= 0; --d) {
    t[d] = pad_targets(s, d, idx[d]);
    if (t[d].count == 0) return 0.0;
    stride[d] = step;
    step *= s.out[d];
    r[d] = 0;
    o[d] = t[d].lo[0];
  }
  double acc = 0;
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < s.ndim; ++d) off += o[d] * stride[d];
    acc += static_cast<double>(static_cast<C>(dy[off]));
    int d = s.ndim - 1;
    for (; d >= 0; --d) {  // the next output coordinate: an odometer over the ranges
      if (++o[d] < t[d].hi[r[d]]) break;
      if (++r[d] < t[d].count) {
        o[d] = t[d].lo[r[d]];
        break;
      }
      r[d] = 0;
      o[d] = t[d].lo[0];
    }
    if (d < 0) return acc;
  }
}

}  // namespace ember::kernels

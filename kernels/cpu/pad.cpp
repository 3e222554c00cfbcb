// F.pad on the cpu (kernels/pad_shape.h): the forward row by row of the output, the last dim's
// source indices worked out once per call; the backward row by row of the input, gathering each
// element's gradient from the output rows that read it, in the order pad_gather defines.
#include "kernels/kernel_table.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/loops.h"
#include "kernels/pad_shape.h"

namespace ember::kernels::cpu {
namespace {

// The offset of row `row` (all dims but the last) in a row-major array of `sizes`, given that
// row's coordinates through `coord(d, c)`; -1 when some coordinate maps to -1.
template <typename Coord>
int64_t row_offset(const PadShape& s, const int64_t* sizes, int64_t row, Coord&& coord) {
  const int last = s.ndim - 1;
  int64_t off = 0, step = sizes[last];
  for (int d = last - 1; d >= 0; --d) {
    const int64_t c = coord(d, row % s.out[d]);
    row /= s.out[d];
    if (c < 0) return -1;
    off += c * step;
    step *= sizes[d];
  }
  return off;
}

template <typename T>
void fwd(const PadShape& s, const T* x, T* y) {
  const int last = s.ndim - 1;
  const int64_t w = s.out[last], rows = w == 0 ? 0 : s.y_numel() / w;
  std::vector<int64_t> src(static_cast<size_t>(w));
  for (int64_t j = 0; j < w; ++j) src[j] = pad_source(s, last, j);
  const T fill = static_cast<T>(s.value);
#pragma omp parallel for schedule(static) if (s.y_numel() >= kParallelGrain && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) {
    T* yr = y + r * w;
    const int64_t off =
        row_offset(s, s.in, r, [&](int d, int64_t o) { return pad_source(s, d, o); });
    if (off < 0) {
      for (int64_t j = 0; j < w; ++j) yr[j] = fill;
      continue;
    }
    const T* xr = x + off;
    for (int64_t j = 0; j < w; ++j) yr[j] = src[j] < 0 ? fill : xr[src[j]];
  }
}

template <typename T>
void bwd(const PadShape& s, const T* dy, T* dx) {
  using C = compute_t<T>;
  const int last = s.ndim - 1;
  const int64_t n = s.in[last], rows = n == 0 ? 0 : s.x_numel() / n;
  std::vector<PadTargets> cols(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) cols[i] = pad_targets(s, last, i);
#pragma omp parallel if (s.x_numel() >= kParallelGrain && !omp_in_parallel())
  {
    std::vector<double> acc(static_cast<size_t>(n));
    std::vector<int64_t> idx(static_cast<size_t>(s.ndim));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      // The output rows that read input row r, in lexicographic order (an odometer over the
      // outer dims' targets), each adding its contributions to the row: per element the order
      // of pad_gather.
      int64_t rem = r;
      for (int d = last - 1; d >= 0; --d) idx[d] = rem % s.in[d], rem /= s.in[d];
      std::fill(acc.begin(), acc.end(), 0.0);
      PadTargets t[kMaxPadDims];
      int64_t o[kMaxPadDims];
      int k[kMaxPadDims];
      bool any = true;
      for (int d = 0; d < last && any; ++d) {
        t[d] = pad_targets(s, d, idx[d]);
        any = t[d].count > 0;
        o[d] = t[d].lo[0], k[d] = 0;
      }
      while (any) {
        int64_t off = 0;
        for (int d = 0; d < last; ++d) off = off * s.out[d] + o[d];
        const T* dyr = dy + off * s.out[last];
        for (int64_t i = 0; i < n; ++i) {
          const PadTargets& c = cols[i];
          double a = acc[i];
          for (int q = 0; q < c.count; ++q)
            for (int64_t j = c.lo[q]; j < c.hi[q]; ++j)
              a += static_cast<double>(static_cast<C>(dyr[j]));
          acc[i] = a;
        }
        int d = last - 1;
        for (; d >= 0; --d) {
          if (++o[d] < t[d].hi[k[d]]) break;
          if (++k[d] < t[d].count) {
            o[d] = t[d].lo[k[d]];
            break;
          }
          k[d] = 0, o[d] = t[d].lo[0];
        }
        any = d >= 0;
      }
      T* dxr = dx + r * n;
      for (int64_t i = 0; i < n; ++i) dxr[i] = static_cast<T>(acc[i]);
    }
  }
}

}  // namespace

void pad_fwd(DType t, const PadShape& s, const void* x, void* y, Stream) {
  dispatch_cpu_dtype(t, "pad", [&](auto zero) {
    using T = decltype(zero);
    fwd<T>(s, static_cast<const T*>(x), static_cast<T*>(y));
  });
}

void pad_bwd(DType t, const PadShape& s, const void* dy, void* dx, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "pad_backward", [&] {
    bwd<scalar_t>(s, static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dx));
  });
}

}  // namespace ember::kernels::cpu

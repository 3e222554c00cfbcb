// F.interpolate on the cpu (kernels/interpolate_shape.h): the taps of every output row and column
// worked out once per call; the forward row by row in parallel; the backward plane by plane,
// separably: each output row's columns gathered into the input's columns (in double), then
// the rows into the input's rows, which is the order and grouping interpolate_bwd specifies.
#include "kernels/kernel_table.h"

#include <vector>

#include "kernels/cpu/loops.h"
#include "kernels/interpolate_shape.h"

namespace ember::kernels::cpu {
namespace {

template <typename C>
std::vector<InterpTaps<C>> taps_of(const InterpShape& s, const InterpAxis& a) {
  std::vector<InterpTaps<C>> t(static_cast<size_t>(a.out));
  for (int64_t o = 0; o < a.out; ++o) t[o] = interp_taps<C>(s.mode, s.align_corners, a, o);
  return t;
}

template <typename T>
void fwd(const InterpShape& s, const T* x, T* y) {
  using C = compute_t<T>;
  const auto th = taps_of<C>(s, {s.ih, s.oh, s.scale_h});
  const auto tw = taps_of<C>(s, {s.iw, s.ow, s.scale_w});
  const int64_t rows = s.planes * s.oh, ow = s.ow;
  const bool linear = s.mode == InterpMode::linear;
#pragma omp parallel for schedule(static) if (rows * ow >= kParallelGrain && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t p = r / s.oh;
    const InterpTaps<C>& h = th[r % s.oh];
    const T* x0 = x + (p * s.ih + h.i0) * s.iw;
    const T* x1 = x + (p * s.ih + h.i1) * s.iw;
    T* yr = y + r * ow;
    if (!linear) {
      for (int64_t j = 0; j < ow; ++j) yr[j] = x0[tw[j].i0];
      continue;
    }
    for (int64_t j = 0; j < ow; ++j) {
      const InterpTaps<C>& w = tw[j];
      const C top = w.l0 * static_cast<C>(x0[w.i0]) + w.l1 * static_cast<C>(x0[w.i1]);
      const C bottom = w.l0 * static_cast<C>(x1[w.i0]) + w.l1 * static_cast<C>(x1[w.i1]);
      yr[j] = static_cast<T>(h.l0 * top + h.l1 * bottom);
    }
  }
}

// For each input coordinate of one dim: the outputs that read it and their weights, flattened.
struct Gather {
  std::vector<int64_t> start;  // per input coordinate, its first entry (size in + 1)
  std::vector<int64_t> out;    // output coordinate of each entry, ascending per input
  std::vector<double> weight;
};

template <typename C>
Gather gather_of(const InterpShape& s, const InterpAxis& a) {
  const auto taps = taps_of<C>(s, a);
  Gather g;
  g.start.push_back(0);
  for (int64_t i = 0; i < a.in; ++i) {
    const InterpRange r = interp_range<C>(s.mode, s.align_corners, a, i);
    for (int64_t o = r.lo; o < r.hi; ++o) {
      g.out.push_back(o);
      g.weight.push_back(static_cast<double>(interp_weight(taps[o], i)));
    }
    g.start.push_back(static_cast<int64_t>(g.out.size()));
  }
  return g;
}

template <typename T>
void bwd(const InterpShape& s, const T* dy, T* dx) {
  using C = compute_t<T>;
  const Gather gh = gather_of<C>(s, {s.ih, s.oh, s.scale_h});
  const Gather gw = gather_of<C>(s, {s.iw, s.ow, s.scale_w});
  const int64_t ih = s.ih, iw = s.iw, oh = s.oh, ow = s.ow;
#pragma omp parallel if (s.planes * oh * ow >= kParallelGrain && !omp_in_parallel())
  {
    std::vector<double> cols(static_cast<size_t>(oh * iw)), acc(static_cast<size_t>(iw));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < s.planes; ++p) {
      // cols[r, i] = sum over the outputs ow reading input column i of w * dy[r, ow].
      for (int64_t r = 0; r < oh; ++r) {
        const T* g = dy + (p * oh + r) * ow;
        double* c = cols.data() + r * iw;
        for (int64_t i = 0; i < iw; ++i) {
          double a = 0;
          for (int64_t e = gw.start[i]; e < gw.start[i + 1]; ++e)
            a += gw.weight[e] * static_cast<double>(static_cast<C>(g[gw.out[e]]));
          c[i] = a;
        }
      }
      // dx[i, :] = sum over the output rows r reading input row i of w * cols[r, :].
      for (int64_t i = 0; i < ih; ++i) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t e = gh.start[i]; e < gh.start[i + 1]; ++e) {
          const double w = gh.weight[e];
          const double* c = cols.data() + gh.out[e] * iw;
          for (int64_t j = 0; j < iw; ++j) acc[j] += w * c[j];
        }
        T* d = dx + (p * ih + i) * iw;
        for (int64_t j = 0; j < iw; ++j) d[j] = static_cast<T>(acc[j]);
      }
    }
  }
}

}  // namespace

void interpolate_fwd(DType t, const InterpShape& s, const void* x, void* y, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "interpolate", [&] {
    fwd<scalar_t>(s, static_cast<const scalar_t*>(x), static_cast<scalar_t*>(y));
  });
}

void interpolate_bwd(DType t, const InterpShape& s, const void* dy, void* dx, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "interpolate_backward", [&] {
    bwd<scalar_t>(s, static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dx));
  });
}

}  // namespace ember::kernels::cpu

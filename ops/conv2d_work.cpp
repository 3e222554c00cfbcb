// The counting helpers of the convolution cost model (ops/conv2d_work.h).
#include "ops/conv2d_work.h"

#include <algorithm>

namespace ember::ops {

int64_t conv_taps_along(int64_t out_size, int64_t taps, int64_t in_size, int64_t stride,
                        int64_t pad, int64_t dil) {
  int64_t n = 0;
  for (int64_t o = 0; o < out_size; ++o)
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = o * stride - pad + t * dil;
      n += i >= 0 && i < in_size ? 1 : 0;
    }
  return n;
}

int64_t conv_live_macs(const kernels::ConvShape& s) {
  return s.n * s.k * s.cg() * conv_taps_along(s.oh, s.r, s.h, s.stride_h, s.pad_h, s.dil_h) *
         conv_taps_along(s.ow, s.s, s.w, s.stride_w, s.pad_w, s.dil_w);
}

int64_t windows_inside(int64_t tiles, int64_t step, int64_t window, int64_t pad, int64_t size) {
  int64_t n = 0;
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t lo = std::max<int64_t>(t * step - pad, 0);
    const int64_t hi = std::min<int64_t>(t * step - pad + window, size);
    n += std::max<int64_t>(hi - lo, 0);
  }
  return n;
}

// gemm.cu: every (batch, row tile, column tile) block runs its whole tile over the reduction in
// steps of 8 (the fast kernel) or 16 (the tiled one), and loads the part of its rows of A and
// columns of B inside the matrices: A once per column tile, B once per row tile.
ConvWork gemm_work(const kernels::GemmPlan& p, const kernels::GemmShape& s, int64_t item) {
  ConvWork w;
  if (p.kernel != kernels::GemmKernel::f32_fast && p.kernel != kernels::GemmKernel::tiled) return w;
  const int64_t m_tiles = (s.m + p.bm - 1) / p.bm, n_tiles = (s.n + p.bn - 1) / p.bn;
  const int64_t step = p.kernel == kernels::GemmKernel::f32_fast ? 8 : 16;
  const int64_t depth = (s.k + step - 1) / step * step;
  w.flops = 2.0 * double(s.batch) * double(m_tiles * n_tiles) * double(depth) * p.bm * p.bn;
  const double loads = double(s.batch) * double(s.k) * double(n_tiles * s.m + m_tiles * s.n);
  w.bytes = double(item) * (loads + double(s.batch) * double(s.m) * double(s.n));
  w.launches = 1;
  return w;
}

}  // namespace ember::ops

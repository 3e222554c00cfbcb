// The plain parameters of Winograd convolution (kernels/winograd_math.h has the tables and the
// transforms): which tile size, the geometry of one run and the workspace, shared by the CPU
// kernels (kernels/cpu/conv2d_winograd.cpp), the GPU kernels (kernels/cuda/conv2d_winograd.cu)
// and ops/conv2d_winograd.cpp.
//
// The kernels (kernels/kernel_table.h): conv2d_fwd_winograd and conv2d_bwd_data_winograd; the
// fused F(2x2, 3x3) tile on the GPU backends only (the cpu's kernels throw ValueError).
// requires: t float32 or float64; s a 3 x 3, stride-1, dilation-1, ungrouped convolution with
//           padding 0..2 (ops/conv2d_winograd.cpp checks it); buffers as in kernels/conv_shape.h;
//           a workspace of winograd_workspace_bytes(winograd_geometry(tile, s, d), item) bytes.
// ensures:  y = conv(x, w) (+ bias) or dx, written in full; deterministic (no atomics, every
//           element summed in a fixed order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/conv_shape.h"
#include "kernels/gemm_shape.h"
#include "runtime/host_device.h"

namespace ember::kernels {

// The two output tile sizes, F(2x2, 3x3) and F(4x4, 3x3), non-fused; and F(2x2, 3x3) fused (the
// input transform, the products and the output transform in one GPU kernel, Note [Fused
// Winograd F(2x2, 3x3)] in kernels/cuda/conv2d_winograd.cu).
enum class WinogradTile : uint8_t { f2x2_3x3, f4x4_3x3, f2x2_3x3_fused };

// One stride-1 3 x 3 correlation as the Winograd kernels run it: `in` (n x ci x h x w, zero
// padded by ph, pw) correlated with the filters gives `out` (n x co x oh x ow). Forward: in = x,
// out = y, the filter read as w[co][ci][r][s]. Backward-data: in = dy, out = dx, the filter
// rotated by 180 degrees with its channels swapped (w[ci][co][2 - r][2 - s]) and padding
// 2 - pad, so that pad 0..2 stays 0..2 (Note [Winograd backward data] in ops/conv2d_winograd.cpp).
struct WinogradGeometry {
  int m = 2, alpha = 4;
  int64_t n = 0, ci = 0, h = 0, w = 0;  // the correlated tensor
  int64_t co = 0, oh = 0, ow = 0;       // the result
  int64_t ph = 0, pw = 0;
  int64_t tiles_h = 0, tiles_w = 0;  // ceil(oh / m), ceil(ow / m)
  bool flip = false;                 // backward-data's filter reading
  bool fused = false;                // one kernel: no V or M in the workspace

  EMBER_HOST_DEVICE int64_t tiles() const { return n * tiles_h * tiles_w; }
  EMBER_HOST_DEVICE int64_t positions() const { return int64_t(alpha) * alpha; }
  // Elements of the three buffers in the workspace, in this order: U [alpha^2][co][ci],
  // V [alpha^2][ci][tiles], M [alpha^2][co][tiles] (the fused kernel keeps only U).
  EMBER_HOST_DEVICE int64_t u_elems() const { return positions() * co * ci; }
  EMBER_HOST_DEVICE int64_t v_elems() const { return positions() * ci * tiles(); }
  EMBER_HOST_DEVICE int64_t m_elems() const { return positions() * co * tiles(); }
  // The filter element that tap (r, s) of output channel o and input channel i reads.
  EMBER_HOST_DEVICE int64_t filter_index(int64_t o, int64_t i, int r, int s) const {
    return flip ? (i * co + o) * 9 + (2 - r) * 3 + (2 - s) : (o * ci + i) * 9 + r * 3 + s;
  }
};

inline int winograd_m(WinogradTile t) {
  return t == WinogradTile::f4x4_3x3 ? 4 : 2;
}

// requires: s a 3 x 3, stride-1, dilation-1, ungrouped convolution with padding 0..2, and d
// forward or backward-data.
inline WinogradGeometry winograd_geometry(WinogradTile t, const ConvShape& s, ConvDirection d) {
  WinogradGeometry g;
  g.m = winograd_m(t), g.alpha = g.m + 2;
  g.fused = t == WinogradTile::f2x2_3x3_fused;
  g.n = s.n;
  if (d == ConvDirection::backward_data) {
    g.ci = s.k, g.h = s.oh, g.w = s.ow, g.co = s.c, g.oh = s.h, g.ow = s.w;
    g.ph = 2 - s.pad_h, g.pw = 2 - s.pad_w, g.flip = true;
  } else {
    g.ci = s.c, g.h = s.h, g.w = s.w, g.co = s.k, g.oh = s.oh, g.ow = s.ow;
    g.ph = s.pad_h, g.pw = s.pad_w;
  }
  g.tiles_h = (g.oh + g.m - 1) / g.m, g.tiles_w = (g.ow + g.m - 1) / g.m;
  return g;
}

// The workspace of both devices' Winograd kernels, exactly:
//   item * alpha^2 * (co * ci + (ci + co) * tiles),  tiles = n * ceil(oh / m) * ceil(ow / m)
// with item the element size and (ci, co, oh, ow) the correlated tensor's and the result's
// channels and size (forward: C, K, OH, OW; backward-data: K, C, H, W); fused, U's alone:
//   item * 16 * co * ci.
// The fused F(2x2, 3x3) kernel's block (Note [Fused Winograd F(2x2, 3x3)] in
// kernels/cuda/conv2d_winograd.cu): 16 output channels x 16 tiles on 256 threads, the input
// channels staged 16 (float32) or 8 (float64) at a time.
struct WinogradFusedBlock {
  static constexpr int kChannels = 16, kTiles = 16, kThreads = 256;
  static constexpr int chunk(size_t item) { return item == 4 ? 16 : 8; }
};

// The GPU's alpha^2 products M[xi] (co x tiles) = U[xi] (co x ci) . V[xi] (ci x tiles), all three
// row-major and packed one after another in the workspace: one gemm_batched call.
inline GemmShape winograd_products_shape(const WinogradGeometry& g) {
  GemmShape s;
  s.m = g.co, s.n = g.tiles(), s.k = g.ci;
  s.a_row = g.ci, s.a_col = 1, s.b_row = g.tiles(), s.b_col = 1;
  s.batch = g.positions();
  s.batch_index.ndim = 1;
  s.batch_index.sizes[0] = g.positions();
  s.batch_index.strides[0][0] = g.co * g.ci;
  s.batch_index.strides[1][0] = g.ci * g.tiles();
  return s;
}

inline size_t winograd_workspace_bytes(const WinogradGeometry& g, size_t item) {
  const int64_t vm = g.fused ? 0 : g.v_elems() + g.m_elems();
  return static_cast<size_t>(g.u_elems() + vm) * item;
}

}  // namespace ember::kernels

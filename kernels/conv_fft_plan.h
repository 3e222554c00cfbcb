// How the FFT convolution (kernels/cuda/conv2d_fft.cu) cuts one direction into transforms: the
// tile, the chunks and the workspace, as plain data that the kernels, the ops and the tests share
// (docs/conv.md, "FFT convolution").
//
// Both directions it runs are one correlation of an input A (ca channels of ha x wa) with filters
// F (ko x ca x R x S) into an output (ko channels of ho x wo):
//   out[o][p][q] = sum over a, u, v of F[o][a][u][v] * A[a][p - pad_h + u][q - pad_w + v]
// forward:        A = x, F = w, pad = the padding;
// backward-data:  A = dy, F[c][k][u][v] = w[k][c][R-1-u][S-1-v] (rotated, channels swapped),
//                 pad' = R - 1 - pad (negative when the padding exceeds R - 1: a crop).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::kernels {

// The most workspace the FFT convolution asks for: the plan shrinks its chunks to stay under it,
// and conv2d_fft_supports says no when even the smallest chunks (one image, one input channel,
// one output channel) do not fit.
constexpr size_t kConvFftWorkspaceCap = size_t(256) << 20;  // 256 MiB

// The transform sizes the kernels are built for (points per side of a square tile).
constexpr int kConvFftTiles[] = {16, 32, 64};

// conv2d_fft_plan(t, shape, direction) for a supported key:
// ensures: tile is the transform size T (of kConvFftTiles, at least the filter's size, a block's
//          shared memory within the current device's opt-in limit); out_h x out_w = (T - R + 1) x (T - S + 1) outputs per
//          tile (overlap-save keeps the part that no circular wrap reaches); tiles_h x tiles_w
//          tiles cover an output image. The spectra are kept in the workspace as half spectra of
//          T x (T/2 + 1) complex numbers, `spectrum` of them per transform, in three arrays:
//            filters  out_chunk x in_chunk spectra,
//            inputs   in_chunk x (images x tiles_h x tiles_w),
//            products out_chunk x (images x tiles_h x tiles_w),
//          so workspace_bytes = 2 * sizeof(element) * spectrum *
//            (out_chunk * in_chunk + (in_chunk + out_chunk) * images * tiles_h * tiles_w).
//          chunks[0..2] count the chunks of images, input channels and output channels
//          (`images`, `in_chunk`, `out_chunk` each; the last chunk may be short).
struct ConvFftPlan {
  int tile = 0;
  int out_h = 0, out_w = 0;
  int64_t tiles_h = 0, tiles_w = 0;
  int64_t images = 0, in_chunk = 0, out_chunk = 0;
  int64_t chunks[3] = {0, 0, 0};
  int64_t spectrum = 0;  // T * (T/2 + 1)
  int threads = 0;       // per transform block (64 for 16-point tiles, else 256)
  size_t workspace_bytes = 0;
};

// The kernel-table entries (kernels/kernel_table.h), on cuda and emu (the cpu's say
// "unsupported: runs on the GPU backends" and throw if run):
//   conv2d_fft_supports(t, s, d, &why)  true for float32/float64, forward or backward-data,
//       stride 1, dilation 1, groups 1, filters up to 32 x 32 and any padding, when the plan meets
//       the cap; otherwise false with the reason.
//   conv2d_fft_plan, conv2d_fft_workspace_bytes  the plan above and its workspace_bytes (0 when
//       there is nothing to compute).
//   conv2d_fwd_fft, conv2d_bwd_data_fft  require: a supported key, contiguous buffers as in
//       kernels/conv_shape.h, a workspace of conv2d_fft_workspace_bytes. ensure: y (+ bias) or dx
//       written in full, every sum in a fixed order (deterministic).
//   conv2d_fft_tiles(t, tile, count, inverse, in, out)  the 2-D transforms alone, for tests:
//       forward, `count` real tile x tile arrays (row-major) to their half spectra (tile x
//       (tile/2 + 1) complex numbers, real and imaginary parts interleaved, row-major over
//       (frequency y, frequency x)); inverse, half spectra back to real arrays, divided by tile^2
//       (so a round trip is the identity). tile is 16, 32 or 64.

}  // namespace ember::kernels

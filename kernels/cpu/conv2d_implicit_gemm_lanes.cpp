// The cpu implicit GEMM's forward with the filters in the vector lanes (Note [Filters in lanes]):
// the filter packing, the image copies and the tile loop. A driver file like
// kernels/cpu/conv2d_implicit_gemm.cpp, compiled for the build's target; the AVX-512 tile is
// lanes_tile in kernels/cpu/conv2d_implicit_gemm_avx512.cpp.
#include <algorithm>
#include <vector>

#include "kernels/cpu/conv2d_implicit_gemm_parts.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu::implicit_gemm {

// Note [Filters in lanes]: where the implicit GEMM would gather panels (Note [Panel packing]):
// strided layers, and at stride 1 the images with no copy layout (rows not a multiple of 16
// wide and OH * OW not a multiple of 16), and also where its copy would be a flat one (8 x 8,
// 4 x 4, 12 x 12), the forward of a 3x3 (any R x S but 1x1) layer of 32k filters instead puts
// 32 filters in the lanes of two vectors, as ONNX Runtime's NCHWc kernels do with their channel
// blocks. Each thread makes a zero-padded copy of its image (C planes of lane_rows x
// lane_cols), and a tile of up to kLanePixels output columns of one output row multiplies, for
// each tap, the tap's 32 filter values (one packed row) by each column's input value broadcast
// from the copy: the stride is only the distance between the broadcast reads, so a strided layer
// costs no more than one at stride 1. The tile is transposed into the output's filter rows as it
// is stored. Faster than the panels on strided 3x3 layers, on stride-1 rows of 14 and (since
// its 8-column tiles store through a transpose in registers) on the flat copies' images; not on
// 1x1 strided layers nor on the padded copies' rows of 16 and more (docs/conv.md, "Filters in
// lanes"). The packed filters' layout follows this choice (conv2d_implicit_gemm_packed_layout).
// AVX-512 only (docs/conv.md).

namespace {

// The rows and columns of the copy: as far as the taps of the last output reach.
int64_t lane_rows(const ConvShape& s) {
  return (s.oh - 1) * s.stride_h + (s.r - 1) * s.dil_h + 1;
}
int64_t lane_cols(const ConvShape& s) {
  return (s.ow - 1) * s.stride_w + (s.s - 1) * s.dil_w + 1;
}

// Rows [row0, row1) of each channel of image n of x's zero-padded copy at buf (Note [Filters in
// lanes]), zeroed and filled.
void fill_lane_image(const ConvShape& s, const float* x, int64_t n, float* buf, int64_t row0,
                     int64_t row1) {
  const int64_t rows = lane_rows(s), cols = lane_cols(s);
  const int64_t w = std::min(s.w, cols - s.pad_w);
  for (int64_t c = 0; c < s.c; ++c)
    fill_plane_rows(buf + c * rows * cols, cols, row0, row1, x + (n * s.c + c) * s.h * s.w, s.w,
                    s.h, s.pad_h, s.pad_w, w);
}

}  // namespace

// Whether s takes the filters in lanes.
bool fwd_lanes_path(const Ukernels& uk, const ConvShape& s) {
  return uk.fwd_lanes != nullptr && s.groups == 1 && s.k % uk.lane_filters == 0 && s.r * s.s > 1 &&
         s.pad_h >= 0 && s.pad_w >= 0 && (s.stride_w == 1 || s.stride_w == 2) &&
         (!image_layout(s).ok || image_layout(s).flat);
}

int64_t lane_image_elems(const ConvShape& s) {
  return round_up(s.c * lane_rows(s) * lane_cols(s), kAlign);
}

// Packs the filters for fwd_lanes: block b (lane_filters filters), tap t, filter f at
// ap[(b * d + t) * lane_filters + f].
void pack_filter_lanes(const Ukernels& uk, const ConvShape& s, const float* w, float* ap) {
  const int64_t d = taps(s), kb = uk.lane_filters;
  for (int64_t b = 0; b < s.k / kb; ++b) {  // written in order, read as kb streams
    for (int64_t t = 0; t < d; ++t)
      for (int64_t f = 0; f < kb; ++f) ap[(b * d + t) * kb + f] = w[(b * kb + f) * d + t];
  }
}

// y = conv(x) with the filters in lanes (Note [Filters in lanes]), packed at `ap`, over `nw`
// threads with image copies at `bufs`; y is written through `ep`. A batch of at least one image
// per thread: each thread owns a run of images. A smaller one: each thread owns a run of every
// image's output rows, copying the input rows they read (Note [Fewer images than threads]).
void fwd_lanes(const Ukernels& uk, const ConvShape& s, const float* x, const float* ap,
               const float* bias, float* y, float* bufs, int64_t nw, const Epilogue& ep) {
  const int64_t d = taps(s), kb = uk.lane_filters, p = s.oh * s.ow, cols = lane_cols(s);
  const int64_t plane = lane_rows(s) * cols, tw = uk.lane_pixels;
  if (s.k / kb * p == 0) return;
  const int64_t nb = s.k / kb;
  // Output rows [oh0, oh1) of image n through filter blocks [b0, b1), from its copy xp: a filter
  // block at a time, in tiles of up to tw columns.
  auto run_rows = [&](const int64_t* off, const float* xp, int64_t n, int64_t oh0, int64_t oh1,
                      int64_t b0, int64_t b1) {
    const std::vector<float> zeros(bias ? 0 : kb, 0.0f);  // the bias of none
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t oh = oh0; oh < oh1; ++oh)
        for (int64_t ow = 0; ow < s.ow; ow += tw) {
          const int64_t np = std::min(tw, s.ow - ow), at = (n * s.k + b * kb) * p + oh * s.ow + ow;
          uk.fwd_lanes(d, ap + b * d * kb, off,
                       xp + oh * s.stride_h * cols + ow * s.stride_w, s.stride_w, np,
                       bias ? bias + b * kb : zeros.data(), ep.tile_bounds(), y + at, p);
          if (ep.z != nullptr)
            for (int64_t f = 0; f < kb; ++f) ep.row(y, at + f * p, y + at + f * p, np);
        }
  };
  // Note [Lanes split at batch 1]: with fewer images than threads, the threads split either the
  // output rows, each reading every filter block, or the filter blocks, each copying the whole
  // image: whichever repeats less. Where the filters outweigh the image copy (64 -> 64 on 8 x 8:
  // 36864 filter values against 6400 copied), each thread then streams only its own blocks'
  // filters. ResNet-style at batch 1 on two threads: 0.98-0.99x (docs/conv.md).
  const bool split_blocks = nb >= nw && s.c * plane < d * s.k;
  run_workers(nw, [&](int64_t wk) {
    float* buf = bufs + wk * lane_image_elems(s);
    const TapTable off(s.c, s.r, s.s, plane, s.dil_h * cols, s.dil_w);
    if (s.n >= nw || split_blocks) {
      const bool images = s.n >= nw;  // a run of images, or every image's run of blocks
      const int64_t n0 = images ? s.n * wk / nw : 0, n1 = images ? s.n * (wk + 1) / nw : s.n;
      const int64_t b0 = images ? 0 : nb * wk / nw, b1 = images ? nb : nb * (wk + 1) / nw;
      for (int64_t n = n0; n < n1; ++n) {
        fill_lane_image(s, x, n, buf, 0, lane_rows(s));
        run_rows(off.data(), buf, n, 0, s.oh, b0, b1);
      }
      return;
    }
    const int64_t oh0 = s.oh * wk / nw, oh1 = s.oh * (wk + 1) / nw;
    if (oh0 == oh1) return;
    for (int64_t n = 0; n < s.n; ++n) {
      fill_lane_image(s, x, n, buf, oh0 * s.stride_h,
                      (oh1 - 1) * s.stride_h + (s.r - 1) * s.dil_h + 1);
      run_rows(off.data(), buf, n, oh0, oh1, 0, nb);
    }
  });
}

}  // namespace ember::kernels::cpu::implicit_gemm

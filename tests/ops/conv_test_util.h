// What the conv2d tests share (tests/ops on the cpu, tests/cuda on the GPU backends): the one
// table of cases that both run on their devices, the naive float64 reference they compare with,
// the parameters in one call, a guard that restores the algorithm registry, and how to tell a
// build that lacks an algorithm's instructions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"

namespace ember::test {

// Stride, padding and dilation (height, width) and groups.
inline ops::Conv2dParams conv_params(int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                                     int64_t dw, int64_t g) {
  ops::Conv2dParams p;
  p.stride = {sh, sw}, p.padding = {ph, pw}, p.dilation = {dh, dw}, p.groups = g;
  return p;
}

// x is n x c x h x w, the filters k x c/groups x r x s.
struct ConvCase {
  const char* name;
  int64_t n, c, h, w, k, r, s;
  ops::Conv2dParams p;
  // The one algorithm a case is aimed at (its tile shapes, say), or nullptr: every algorithm
  // runs it. A large case aimed at one kernel's paths costs the others time and finds nothing.
  const char* only = nullptr;
};

// Every convolution case, run by the cpu tests (every cpu algorithm) and by the GPU tests
// (every GPU algorithm, in every thread order on emu). The first rows aim at the cpu kernels'
// paths (panels, padded and flat image copies), the later ones at the GPU tiles.
inline const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> c = {
      {"3x3 plain", 2, 3, 7, 6, 5, 3, 3, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"batch 1, 1x1 pointwise", 1, 5, 4, 9, 7, 1, 1, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"1x1 stride 2", 3, 4, 7, 5, 3, 1, 1, conv_params(2, 2, 0, 0, 1, 1, 1)},
      {"5x5 padding 2", 2, 3, 9, 8, 4, 5, 5, conv_params(1, 1, 2, 2, 1, 1, 1)},
      {"3x3 stride 2 pad 1", 3, 6, 11, 10, 5, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 1)},
      {"dilation 2", 2, 3, 10, 9, 4, 3, 3, conv_params(1, 1, 2, 1, 2, 2, 1)},
      {"groups 2", 2, 6, 7, 7, 4, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 2)},
      {"depthwise", 2, 5, 8, 6, 5, 3, 3, conv_params(2, 1, 1, 1, 1, 1, 5)},
      {"depthwise multiplier 2", 1, 3, 6, 7, 6, 3, 2, conv_params(1, 2, 1, 0, 1, 1, 3)},
      // Depthwise rows of whole vectors and a tail (18 outputs: 8 + 8 + 2 on AVX2, 16 + 2 on
      // AVX-512), split into stride-2 phases; 5x5 filters (the 25-tap kernel) on rows of 19.
      {"depthwise stride 2, rows of 18", 2, 4, 13, 35, 4, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 4)},
      // 3x3 stride 2 and 1 with one column of padding, in registers (Note [3x3 depthwise in
      // registers]): strips of whole vectors only (rows of 32), a one-column last strip (rows of
      // 17), one staged strip (rows of 7, above), and top padding 0 and 2; at stride 1, rows of 8
      // and 16 (strips that end the row), 13 (a staged last strip) and 5 (staged first).
      {"depthwise stride 2, rows of 32", 1, 3, 6, 32, 3, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 3)},
      {"depthwise stride 2, padding (0, 1), rows of 17", 1, 2, 8, 17, 2, 3, 3,
       conv_params(2, 2, 0, 1, 1, 1, 2)},
      {"depthwise stride 2, padding (2, 1)", 2, 2, 5, 12, 2, 3, 3, conv_params(2, 2, 2, 1, 1, 1, 2)},
      {"depthwise 3x3, rows of 16", 2, 3, 6, 16, 3, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 3)},
      {"depthwise 3x3, 8x8", 1, 4, 8, 8, 4, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 4)},
      {"depthwise 3x3, padding (0, 1), rows of 13", 1, 2, 6, 13, 2, 3, 3,
       conv_params(1, 1, 0, 1, 1, 1, 2)},
      {"depthwise 3x3, padding (2, 1), rows of 5", 2, 2, 4, 5, 2, 3, 3,
       conv_params(1, 1, 2, 1, 1, 1, 2)},
      {"depthwise 5x5 padding 2, rows of 19", 2, 3, 7, 19, 3, 5, 5,
       conv_params(1, 1, 2, 2, 1, 1, 3)},
      // Planes narrower than the build's vectors take narrower ones (depthwise_bytes in
      // kernels/cpu/conv2d_direct.cpp): rows of 8 outputs in registers at stride 2, and 8x8
      // through the 5x5 phase buffer (8 lanes on AVX-512; rows of 5 and 13 above: 4 and 8).
      {"depthwise stride 2, 16x16 (rows of 8)", 2, 3, 16, 16, 3, 3, 3,
       conv_params(2, 2, 1, 1, 1, 1, 3)},
      {"depthwise 5x5 padding 2, 8x8", 1, 3, 8, 8, 3, 5, 5, conv_params(1, 1, 2, 2, 1, 1, 3)},
      // Rows shorter than the strip (7 outputs in 8 lanes on AVX2 and AVX-512): whole vectors
      // loaded and the lanes past the row zeroed, the input's last rows copied instead.
      {"depthwise 3x3, 7x7", 2, 3, 7, 7, 3, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 3)},
      {"depthwise stride 2, 14x14 (rows of 7)", 2, 3, 14, 14, 3, 3, 3,
       conv_params(2, 2, 1, 1, 1, 1, 3)},
      // 1x1 without padding, the cpu implicit_gemm reading the images where they are (flat and
      // padded layouts).
      {"1x1, 8x6 images read in place", 3, 5, 8, 6, 7, 1, 1, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"1x1, rows of 16 read in place", 2, 3, 3, 16, 9, 1, 1, conv_params(1, 1, 0, 0, 1, 1, 1)},
      // Planes of 4 KiB with at least 32 filters a group: copied with their planes 16 floats
      // apart (Note [Skewed planes]), padded and flat layouts, groups 2.
      {"1x1, 32x32 planes, 37 filters", 2, 5, 32, 32, 37, 1, 1, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"1x1, 128x8 planes, 64 filters, groups 2", 2, 4, 128, 8, 64, 1, 1,
       conv_params(1, 1, 0, 0, 1, 1, 2)},
      // Batch 1 with over a million multiply-adds: on several threads the cpu implicit_gemm's
      // threads share one image copy and split its panels (Note [Fewer images than threads]).
      {"batch 1, rows of 16, threads sharing the image", 1, 16, 16, 16, 32, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1)},
      // Batch 1, 1x1 layers that widen the channels, read in place: on several threads the cpu
      // implicit_gemm's threads split the filter blocks, a partial block last (Note [Filters
      // split at batch 1]); padded and flat layouts.
      {"batch 1, 1x1 widening 7 -> 44 channels", 1, 7, 16, 32, 44, 1, 1,
       conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"batch 1, 1x1 widening 9 -> 230 channels, 8x8", 1, 9, 8, 8, 230, 1, 1,
       conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"asymmetric everything", 5, 9, 13, 11, 10, 3, 5, conv_params(2, 3, 1, 2, 2, 1, 1)},
      {"batch 17 (more images than threads)", 17, 3, 6, 5, 4, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1)},
      // Rows wider than one 32-column panel, filter counts off the 8/16/64 tiles, panels that
      // span images, and padding larger than the filter.
      {"wide rows, 21 filters", 2, 5, 37, 40, 21, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"70 filters, 5x5 padding 2", 3, 7, 7, 9, 70, 5, 5, conv_params(1, 1, 2, 2, 1, 1, 1)},
      {"1x1 padding 2", 2, 3, 5, 6, 4, 1, 1, conv_params(1, 1, 2, 2, 1, 1, 1)},
      // Output rows a multiple of 16 wide (the cpu implicit_gemm reads padded images directly),
      // with a last panel half full, dilation, groups and padding beyond the filter.
      {"rows of 32", 2, 5, 9, 32, 13, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"rows of 16, odd height", 3, 7, 5, 16, 10, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"rows of 16, dilation 2", 1, 3, 12, 16, 9, 3, 3, conv_params(1, 1, 2, 2, 2, 2, 1)},
      {"rows of 16, groups 2", 2, 4, 6, 16, 6, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 2)},
      {"rows of 16, 1x1 padding 2", 2, 3, 5, 12, 4, 1, 1, conv_params(1, 1, 2, 2, 1, 1, 1)},
      // Other widths with OH*OW a multiple of 16 (the cpu implicit_gemm's shifted flat copies).
      {"8x8 images", 2, 5, 8, 8, 7, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"flat, dilation 2, uneven padding", 3, 3, 8, 12, 10, 3, 3, conv_params(1, 1, 2, 1, 2, 2, 1)},
      {"flat, groups 3", 2, 6, 4, 4, 9, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 3)},
      {"flat, 64 filters of 32 channels", 1, 32, 8, 8, 64, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      // Strided, OH*OW a multiple of 16 (ResNet's downsampling layers): an image per thread, one
      // image at one thread, one image on two threads, a 1x1 shortcut, groups, and stride (2, 3)
      // with dilation (2, 1) and no column padding.
      {"stride 2, 16x16 out", 2, 5, 32, 32, 9, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 1)},
      {"batch 1, stride 2, 8x8 out", 1, 6, 16, 16, 10, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 1)},
      {"batch 1, stride 2, 16x16 out, threads sharing the image", 1, 8, 32, 32, 16, 3, 3,
       conv_params(2, 2, 1, 1, 1, 1, 1)},
      {"1x1 stride 2, 8x8 out", 2, 6, 16, 16, 5, 1, 1, conv_params(2, 2, 0, 0, 1, 1, 1)},
      {"stride 2, groups 2, 8x4 out", 2, 4, 16, 8, 6, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 2)},
      {"stride (2, 3), dilation (2, 1), 4x4 out", 3, 4, 8, 12, 7, 3, 3,
       conv_params(2, 3, 2, 0, 2, 1, 1)},
      // The GPU kernels' paths.
      {"3x3 pad 1, 7x9, C=3 K=5", 2, 3, 7, 9, 5, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"batch 1, 1x1, 13x11, C=5 K=7", 1, 5, 13, 11, 7, 1, 1, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"5x5 stride 2 pad 2, C=7", 2, 7, 13, 11, 6, 5, 5, conv_params(2, 2, 2, 2, 1, 1, 1)},
      {"dilation 2", 1, 3, 9, 10, 4, 3, 3, conv_params(1, 1, 2, 1, 2, 2, 1)},
      {"groups 2", 2, 6, 7, 9, 4, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 2)},
      {"depthwise stride 2", 2, 5, 9, 7, 5, 3, 3, conv_params(2, 2, 1, 1, 1, 1, 5)},
      {"depthwise, many blocks of outputs, stride (1, 2)", 1, 3, 23, 37, 3, 5, 3,
       conv_params(1, 2, 2, 1, 1, 1, 3)},
      {"depthwise stride 3, wide pads, dilation 2", 2, 4, 11, 9, 4, 3, 2,
       conv_params(3, 3, 3, 2, 2, 2, 4)},
      {"M = N = K = 1", 1, 1, 1, 1, 1, 1, 1, conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"stride (2, 3), pad (1, 0), dilation (1, 2), groups 2", 1, 4, 11, 13, 6, 3, 2,
       conv_params(2, 3, 1, 0, 1, 2, 2)},
      {"1x1 stride 3 padding 1", 2, 3, 8, 8, 4, 1, 1, conv_params(3, 3, 1, 1, 1, 1, 1)},
      {"40 filters, 36 channels (widest tiles)", 1, 36, 6, 5, 40, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"long reduction (split-K backward-filter)", 4, 3, 16, 17, 8, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1)},
      {"several tiles in every dimension, groups 2", 2, 16, 20, 19, 144, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 2)},
      // Each implicit_gemm tile shape (Note [Choosing the tile]; the emulator has 8
      // multiprocessors), with partial tiles along both dims: implicit_gemm's cases only.
      {"16 filters, 5 channels (512 x 16 tiles)", 2, 5, 44, 45, 16, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1), "implicit_gemm"},
      {"24 filters, 5 channels, stride 2 (256 x 32; 512 x 16 backward-data)", 2, 5, 61, 60, 24, 3,
       3, conv_params(2, 2, 1, 1, 1, 1, 1), "implicit_gemm"},
      {"27 filters, 16 channels (128 x 32; 256 x 32 backward-filter)", 1, 16, 6, 7, 27, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1), "implicit_gemm"},
      {"40 filters, 48 channels per group, groups 2 (256 x 64)", 1, 96, 42, 44, 80, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 2), "implicit_gemm"},
      {"48 filters, 6 channels (128 x 64)", 1, 6, 30, 33, 48, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1), "implicit_gemm"},
      {"150 filters, 70 channels, 1x1 (128 x 128; 128 x 64 backward-data)", 1, 70, 20, 21, 150, 1,
       1, conv_params(1, 1, 0, 0, 1, 1, 1), "implicit_gemm"},
      {"20 channels, 5 filters, stride 2 (256 x 32 backward-data)", 1, 20, 61, 60, 5, 3, 3,
       conv_params(2, 2, 1, 1, 1, 1, 1), "implicit_gemm"},
      {"100 channels, 3 filters, 1x1 (128 x 128 backward-data)", 1, 100, 30, 31, 3, 1, 1,
       conv_params(1, 1, 0, 0, 1, 1, 1), "implicit_gemm"},
      {"16 filters, 200 channels (512 x 16 backward-filter)", 1, 200, 4, 4, 16, 3, 3,
       conv_params(1, 1, 1, 1, 1, 1, 1), "implicit_gemm"},
      // Winograd's edges (3x3, stride 1, padding 0..2): outputs not a multiple of the 2x2 or
      // 4x4 tile, outputs smaller than one tile, uneven padding, channels off the multiples of 8.
      {"3x3 pad 2, 5x7, C=9 K=11 (Winograd edge tiles)", 1, 9, 5, 7, 11, 3, 3,
       conv_params(1, 1, 2, 2, 1, 1, 1)},
      {"3x3 pad 0, 3x4 (one output row, less than a tile)", 2, 5, 3, 4, 3, 3, 3,
       conv_params(1, 1, 0, 0, 1, 1, 1)},
      {"3x3 pad (2, 0), 2x6, C=7 K=13", 3, 7, 2, 6, 13, 3, 3, conv_params(1, 1, 2, 0, 1, 1, 1)},
      {"3x3 pad (0, 1), 11x13, C=10 K=6", 1, 10, 11, 13, 6, 3, 3, conv_params(1, 1, 0, 1, 1, 1, 1)},
      {"3x3 pad 1, 1x1 image", 2, 3, 1, 1, 4, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)},
  };
  return c;
}

// Naive float64 convolution in scatter form (one loop nest for all three directions):
// y[n,k,oh,ow] = sum x[n,c,ih,iw] * w[k,c',r,s]; also returns, per element, the sum of |terms|
// (for a rounding tolerance).
struct ConvRef {
  std::vector<double> y, dx, dw, y_abs, dx_abs, dw_abs;
};

inline ConvRef conv_reference(const ConvCase& cs, const std::vector<double>& x,
                              const std::vector<double>& w, const std::vector<double>& b,
                              const std::vector<double>& dy, int64_t oh, int64_t ow) {
  const ops::Conv2dParams& p = cs.p;
  const int64_t cg = cs.c / p.groups, kg = cs.k / p.groups;
  ConvRef r;
  r.y.assign(cs.n * cs.k * oh * ow, 0.0);
  r.y_abs = r.y;
  r.dx.assign(x.size(), 0.0);
  r.dx_abs = r.dx;
  r.dw.assign(w.size(), 0.0);
  r.dw_abs = r.dw;
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t k = 0; k < cs.k; ++k)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t yi = ((n * cs.k + k) * oh + i) * ow + j;
          if (!b.empty()) r.y[yi] += b[k], r.y_abs[yi] += std::abs(b[k]);
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t u = 0; u < cs.r; ++u)
              for (int64_t v = 0; v < cs.s; ++v) {
                const int64_t ih = i * p.stride[0] - p.padding[0] + u * p.dilation[0];
                const int64_t iw = j * p.stride[1] - p.padding[1] + v * p.dilation[1];
                if (ih < 0 || ih >= cs.h || iw < 0 || iw >= cs.w) continue;
                const int64_t xi = ((n * cs.c + (k / kg) * cg + c) * cs.h + ih) * cs.w + iw;
                const int64_t wi = ((k * cg + c) * cs.r + u) * cs.s + v;
                r.y[yi] += x[xi] * w[wi];
                r.y_abs[yi] += std::abs(x[xi] * w[wi]);
                if (dy.empty()) continue;
                r.dx[xi] += dy[yi] * w[wi];
                r.dx_abs[xi] += std::abs(dy[yi] * w[wi]);
                r.dw[wi] += dy[yi] * x[xi];
                r.dw_abs[wi] += std::abs(dy[yi] * x[xi]);
              }
        }
  return r;
}

// Restores the registry's policy (no forced algorithm, heuristic, empty cache) after a test
// changes it.
struct ConvPolicyGuard {
  ~ConvPolicyGuard() {
    ops::set_conv_algo("");
    ops::reset_conv_settings();
    unsetenv("EMBER_CONV_ALGO");
    unsetenv("EMBER_CONV_POLICY");
    unsetenv("EMBER_CONV_CACHE");
    unsetenv("EMBER_CONV_WORKSPACE_LIMIT");
    ops::clear_conv_algo_cache();
  }
};

// True when the registry refuses candidate `c` because this CPU (or the EMBER_CPU_ISA cap) lacks
// the instructions it needs (implicit_gemm on the cpu without AVX2+FMA: "needs AVX2+FMA or
// AVX-512; ..."). Such a candidate is a case to skip, loudly, with that reason; any other refusal
// is the registry's to justify.
inline bool built_without_instructions(const ops::ConvCandidate& c) {
  return !c.supported && c.reason.find("needs AVX2+FMA or AVX-512") != std::string::npos;
}

// got (on dev, dtype t) against the float64 loops: within 16 ulps of the sum of the terms'
// magnitudes (abs_sum), a bound that holds for any summation order of the lengths here, times
// `growth` for an algorithm whose transforms amplify rounding (Winograd: winograd_test_util.h).
inline void check_conv_close(const Tensor& got, Device dev, const std::vector<double>& want,
                             const std::vector<double>& abs_sum, DType t, double growth = 1.0) {
  CHECK(got.device() == dev);
  CHECK(got.dtype() == t);
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  const double eps = t == kFloat32 ? 1.2e-7 : 2.3e-16;
  for (size_t i = 0; i < g.size(); ++i) {
    const double tol = 16 * eps * growth * abs_sum[i] + 1e-30;
    if (!(std::abs(g[i] - want[i]) <= tol)) {
      CAPTURE(i);
      CAPTURE(g[i]);
      CAPTURE(want[i]);
      CAPTURE(tol);
      FAIL_CHECK("value mismatch");
      return;
    }
  }
}

}  // namespace ember::test

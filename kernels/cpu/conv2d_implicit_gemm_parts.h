// Parts shared by the implicit-GEMM convolution's driver files in kernels/cpu/
// (conv2d_implicit_gemm.cpp: forward and backward data; conv2d_implicit_gemm_lanes.cpp: the
// forward with the filters in lanes; conv2d_implicit_gemm_filter.cpp: the filter gradient): tile
// sizes, the threading rule, the image-copy layout, panel runs and the forward's epilogue.
// Private to those files, which are compiled for the build's target and reach the instruction
// sets' micro-kernels through their tables (kernels/cpu/conv2d_implicit_gemm_ukernels.h).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/conv_shape.h"
#include "kernels/cpu/conv2d_implicit_gemm_ukernels.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/output_clamp.h"

namespace ember::kernels::cpu::implicit_gemm {

inline bool unit_stride(const ConvShape& s) {
  return s.stride_h == 1 && s.stride_w == 1;
}

constexpr int64_t kAlign = 16;  // floats: 64-byte alignment of every workspace buffer

inline int64_t round_up(int64_t a, int64_t b) {
  return (a + b - 1) / b * b;
}
// ceil(a / b) for b > 0 and any a.
inline int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -(-a / b);
}
inline int64_t taps(const ConvShape& s) {
  return s.cg() * s.r * s.s;
}
inline int64_t columns(const ConvShape& s) {
  return s.n * s.oh * s.ow;
}
inline int64_t panels(const ConvShape& s) {
  return (columns(s) + kNr - 1) / kNr;
}
// Forward tiles of mr filters (Ukernels::mr) per group.
inline int64_t filter_blocks(const ConvShape& s, int64_t mr) {
  return (s.kg() + mr - 1) / mr;
}

// Parallel only when there is enough work to pay for waking the team. At 1 << 20, MobileNet-style's
// 1x1 layers at batch 1 (0.4-0.9 M multiply-adds, 25-45 us) ran on one thread while the layers
// around them ran on two, and were slower than at one thread (their input half in the other
// core's cache); at 1 << 17 they take 0.016-0.031 ms instead of 0.024-0.046 on two threads.
constexpr int64_t kParallelMacs = int64_t{1} << 17;
// Packed filter values below which packing stays on one thread (at 1 << 16, a 64 -> 64 3x3
// layer's 36864 values were packed by one thread while the other waited: a seventh of its time
// at batch 1 on two threads).
constexpr int64_t kParallelPack = int64_t{1} << 13;
inline int64_t max_threads(const ConvShape& s) {
  return omp_in_parallel() || s.macs() < kParallelMacs ? 1 : omp_get_max_threads();
}
inline bool image_path(const ConvShape& s);
inline int64_t threads_for(const ConvShape& s) {
  if (max_threads(s) == 1) return 1;
  const int64_t units = image_path(s) ? s.n : panels(s);
  return std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), units));
}

// Note [Padded images]: with unit stride, a tap's values for 16 consecutive output columns can
// be 16 consecutive floats of a prepared copy of the image, which each thread makes once per
// image in a buffer that stays in L2; the micro-kernels then load their operand from there at a
// per-tap offset, with no panel packing. Two layouts:
//  - padded: output rows a multiple of 16 wide. One zero-padded copy; a 16-column half of a
//    panel lies in one output row, at row oh + r*dil, column ow + q*dil of the copy.
//  - flat: any output width, OH*OW a multiple of 16. One copy per filter column q, shifted by
//    q*dil - pad and cut to the output's width (zero where the shift leaves the image), so its
//    rows are exactly OW apart and 16 consecutive outputs are 16 consecutive floats even across
//    output rows.
//  Channel planes of hp x wp lie `pitch` floats apart: hp wp, or 16 more (Note [Skewed planes]).
//
// Note [Skewed planes]: a micro-kernel's operand is a 32-float run of each channel at one offset,
// so channels whose planes lie a multiple of 4 KiB apart put all their runs in the same two sets
// of the 8-way L1 and each filter block reloads the panel from L2. Such planes (32x32, 64x32...)
// are laid out 16 floats further apart. The image is then copied where a 1x1 convolution would
// read it in place, which pays where at least four filter blocks read each panel. One AVX-512
// core, batch 32, ReLU6: 16 -> 96 channels on 32x32 2.5-3.2 -> 1.8 ms, 96 -> 32 on 32x32 3.7
// -> 3.0 ms; 16 -> 16 on 32x32 (two blocks) went 0.21 -> 0.25 ms and keeps the image. Planes of
// 1 KiB (16x16) spread every fourth channel over the sets and gained nothing.
struct ImageLayout {
  bool ok = false, flat = false;
  int64_t copies = 1, hp = 0, wp = 0;  // copies of C x hp x wp; data starts at row pad_h
  int64_t pitch = 0;  // floats from one channel plane to the next
  int64_t elems(const ConvShape& s) const { return round_up(copies * s.c * pitch, kAlign); }
  // Offset of group g's tap (c, r, q) and of output column p (within the image).
  int64_t tap(const ConvShape& s, int64_t g, int64_t c, int64_t r, int64_t q) const {
    const int64_t ch = g * s.cg() + c;
    return flat ? (q * s.c + ch) * pitch + r * s.dil_h * wp
                : ch * pitch + r * s.dil_h * wp + q * s.dil_w;
  }
  int64_t column(const ConvShape& s, int64_t p) const {
    return flat ? p : (p / s.ow) * wp + p % s.ow;
  }
  // Whether the copy would be the image itself (one copy, no padding, planes H x W lying H W
  // apart: a 1x1 convolution's, say), so that the kernels can read the image where it is.
  bool is_image(const ConvShape& s) const {
    return copies == 1 && s.pad_h == 0 && s.pad_w == 0 && hp == s.h && wp == s.w &&
           pitch == hp * wp;
  }
};

constexpr int64_t kMaxImageElems = int64_t{1} << 20;  // per thread: 4 MiB

inline ImageLayout image_layout(const ConvShape& s) {
  ImageLayout l;
  if (s.stride_h != 1 || s.stride_w != 1 || s.pad_h < 0) return l;
  l.hp = s.pad_h + std::max(s.h, s.oh - s.pad_h + s.dil_h * (s.r - 1));
  if (s.ow % 16 == 0 && s.pad_w >= 0) {
    l.wp = s.pad_w + std::max(s.w, s.ow - s.pad_w + s.dil_w * (s.s - 1));
  } else if (s.oh * s.ow % 16 == 0) {
    l.flat = true, l.copies = s.s, l.wp = s.ow;
  } else {
    return l;
  }
  l.pitch = l.hp * l.wp;
  if (l.pitch % 1024 == 0 && s.kg() >= 32) l.pitch += 16;  // Note [Skewed planes]
  l.ok = l.elems(s) <= kMaxImageElems;
  return l;
}
// The image copies split the batch over the threads, so they serve batches of at least one image
// per thread; smaller batches split panels instead. The answer depends on the threading context
// (inside a parallel region there is one thread), so the drivers decide and size everything
// before they start their threads.
inline bool image_path(const ConvShape& s) {
  return image_layout(s).ok && s.n >= max_threads(s);
}

// The runs of the panel whose first column is j0; returns how many.
inline int panel_runs(const ConvShape& s, int64_t j0, Run* runs) {
  const int64_t p = s.oh * s.ow, end = std::min(j0 + kNr, columns(s));
  int count = 0;
  for (int64_t j = j0; j < end;) {
    const int64_t n = j / p, rem = j % p, oh = rem / s.ow, ow = rem % s.ow;
    const int64_t len = std::min(end - j, s.ow - ow);
    runs[count++] = {n, oh, ow, len, j - j0};
    j += len;
  }
  return count;
}

// dst[0, n) = src[0, n) in vectors of W bytes (the build's widest to start with), the last one
// overlapping the one before it; n shorter than one vector takes vectors of half the width. An
// image copy's rows are 8-64 floats, where a call to memcpy costs more than the copy (docs/conv.md,
// "Image copies" in the batch-1 list).
template <int W = kVectorBytes>
inline void copy_floats(float* dst, const float* src, int64_t n) {
  constexpr int64_t k = W / int64_t{sizeof(float)};
  if constexpr (k == 1) {
    if (n > 0) dst[0] = src[0];
  } else {
    if (n < k) return copy_floats<W / 2>(dst, src, n);
    typedef float V __attribute__((vector_size(W), aligned(4)));
    for (int64_t j = 0; j < n - k; j += k)
      *reinterpret_cast<V*>(dst + j) = *reinterpret_cast<const V*>(src + j);
    *reinterpret_cast<V*>(dst + n - k) = *reinterpret_cast<const V*>(src + n - k);
  }
}

// Rows [row0, row1) of a plane of a zero-padded copy, `cols` floats wide, whose row i holds
// source row i - top (rows src_pitch floats apart, h of them) at columns [left, left + len):
// the rows zeroed in one call, then the source's rows copied in. (Writing each row once, its
// margins apart, took twice as long: their lengths are known only at run time.)
inline void fill_plane_rows(float* plane, int64_t cols, int64_t row0, int64_t row1,
                            const float* src, int64_t src_pitch, int64_t h, int64_t top,
                            int64_t left, int64_t len) {
  std::fill(plane + row0 * cols, plane + row1 * cols, 0.0f);
  if (len <= 0) return;
  for (int64_t i = std::max(row0, top); i < std::min(row1, top + h); ++i)
    copy_floats(plane + i * cols + left, src + (i - top) * src_pitch, len);
}

// The offsets of taps t = (c*R + r)*S + q of `channels` channels in an image copy: c*pitch +
// r*row_step + q*col_step. The first channel's R*S entries are worked out, the others' are those
// plus c planes (not each from scratch, which took 0.1-0.3 us of a 16 -> 16 3x3 layer's call;
// nor from the entries just stored, off[t - R*S], which stalls on the vector loads that
// straddle two earlier stores). Each thread makes its own, on its stack up to kStackTaps taps: a
// table the main thread wrote on every call and the others read cost it the other cores' copies
// of its lines (0.6-0.9 us a call at batch 1 on two threads), and a vector allocated and zeroed
// on every call about 0.7 us of each thread's share of a 64 -> 64 3x3 layer on 8 x 8. (Not a
// thread-local table: a worker touching the library's thread-local block, 0.1 MiB, makes it.)
class TapTable {
 public:
  static constexpr int64_t kStackTaps = 1024;
  TapTable(int64_t channels, int64_t r, int64_t s, int64_t pitch, int64_t row_step,
           int64_t col_step) {
    const int64_t rs = r * s;
    if (channels * rs > kStackTaps) {
      heap_.resize(channels * rs);
      off_ = heap_.data();
    }
    for (int64_t i = 0; i < r; ++i)
      for (int64_t q = 0; q < s; ++q) off_[i * s + q] = i * row_step + q * col_step;
    for (int64_t c = 1; c < channels; ++c)
      for (int64_t j = 0; j < rs; ++j) off_[c * rs + j] = off_[j] + c * pitch;
  }
  TapTable(const TapTable&) = delete;
  TapTable& operator=(const TapTable&) = delete;
  const int64_t* data() const { return off_; }

 private:
  int64_t local_[kStackTaps];
  std::vector<int64_t> heap_;
  int64_t* off_ = local_;
};

// Copies image n of x into buf in layout l (Note [Padded images]): the whole image (its rows
// only: the rest of buf is zero from its setup), or rows [row0, row1) of the copy's planes,
// zeros included.
void fill_image(const ConvShape& s, const ImageLayout& l, const float* x, int64_t n, float* buf,
                int64_t row0 = 0, int64_t row1 = -1);

// y = clamp(conv + bias + z, lo, hi) as the forward writes it (Note [Clamped convolutions] in
// ops/conv2d.cpp), z the residual (null for none): in the micro-kernels' registers for a block
// stored in place; for a block computed into a tile, by row() as it copies the tile into y.
struct Epilogue {
  float bounds_[2];
  const float* bounds = nullptr;
  const float* z = nullptr;  // the residual, in y's layout
  Epilogue(const OutputClamp* clamp, const float* residual) : z(residual) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    bounds_[0] = clamp ? float(clamp->lo) : -inf;
    bounds_[1] = clamp ? float(clamp->hi) : inf;
    if (clamp != nullptr) bounds = bounds_;
  }
  Epilogue(const Epilogue&) = delete;
  // The micro-kernels' residual for a block stored in place at y + at, and their bounds for a
  // block computed into a tile (row() clamps after adding a residual).
  const float* z_at(int64_t at) const { return z != nullptr ? z + at : nullptr; }
  const float* tile_bounds() const { return z == nullptr ? bounds : nullptr; }
  // Stores y[at, at + len) from src, a tile computed with tile_bounds() (src may be y + at).
  void row(float* y, int64_t at, const float* src, int64_t len) const {
    float* dst = y + at;
    if (z == nullptr) {
      if (src != dst) std::memcpy(dst, src, sizeof(float) * len);
      return;
    }
    const float* zr = z + at;
    for (int64_t j = 0; j < len; ++j) dst[j] = clamp_value(src[j] + zr[j], bounds_[0], bounds_[1]);
  }
};

// The forward with the filters in the vector lanes (kernels/cpu/conv2d_implicit_gemm_lanes.cpp,
// Note [Filters in lanes]): whether s takes it, a thread's image copy in floats, the filter
// packing, and the forward itself (y written through `ep`, over `nw` threads with the copies
// at `bufs`).
bool fwd_lanes_path(const Ukernels& uk, const ConvShape& s);
int64_t lane_image_elems(const ConvShape& s);
void pack_filter_lanes(const Ukernels& uk, const ConvShape& s, const float* w, float* ap);
void fwd_lanes(const Ukernels& uk, const ConvShape& s, const float* x, const float* ap,
               const float* bias, float* y, float* bufs, int64_t nw, const Epilogue& ep);

// The micro-kernels of the instruction set the cap allows on this CPU (kernels/cpu/cpu_isa.h);
// null where there is none (baseline).
const Ukernels* ukernels();

// The filter gradient (kernels/cpu/conv2d_implicit_gemm_filter.cpp): workspace floats for nw
// threads, estimated work (as conv2d_implicit_gemm_work) and the run.
int64_t bwd_filter_elems(const Ukernels& uk, const ConvShape& s, int64_t nw);
double bwd_filter_work(const Ukernels& uk, const ConvShape& s);
// Columns the micro-kernels compute for s: whole 32-column panels, per image on the
// prepared-image path (a last half panel repeats its first half), across images otherwise.
inline double computed_columns(const ConvShape& s) {
  if (image_path(s)) return double(s.n) * s.groups * round_up(s.oh * s.ow, kNr);
  return double(s.groups) * double(panels(s) * kNr);
}
void bwd_filter(const Ukernels& uk, const ConvShape& s, const float* dy, const float* x, float* dw,
                float* ws, int64_t nw);

}  // namespace ember::kernels::cpu::implicit_gemm

// Implicit-GEMM convolution for float32 on AVX2 or AVX-512, chosen at run time. With D = (C/G)*R*S
// filter taps and the output positions of all images numbered j = (n*OH + oh)*OW + ow, the columns
// matrix col(X) is D x (N*OH*OW); it is cut into panels of kNr = 32 columns and never stored whole.
//
// Where a tap's values for 16 consecutive columns can be 16 consecutive floats of a per-thread
// copy of the image (unit stride; Note [Padded images]), the micro-kernels read that copy at a
// per-tap offset. Elsewhere the panels are gathered from the image:
//
// Note [Panel packing]: a panel's columns split into runs that lie in one output row of one image
// (one run when OW >= 32, four when OW = 8). For tap (c, r, q) a run reads one input row at a
// fixed shift (every other float for width stride 2), so row t = (c*R + r)*S + q of the packed
// panel is built in registers from vector loads (two of 16 floats on AVX-512, four of 8 on
// AVX2), the lanes outside the image zeroed, and written with full stores. The panel (D x 32
// floats) stays in L1/L2 while every filter tile uses it, so nothing is written to memory but the
// panel and the output.
//
// This file holds the drivers: filter packing, image copies, the panel loop, threads and
// workspace, the strided backward data. They are compiled for the build's target and call the
// micro-kernels (register tiles: forward, a filter block times a panel; backward filter, taps x
// filters of dWᵀ) through the table of the instruction set chosen at run time
// (kernels/cpu/conv2d_implicit_gemm_ukernels.h; the AVX-512 and AVX2 files say their tiles). A
// call picks its table once, at its start.
#include "kernels/cpu/conv2d_implicit_gemm.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/conv2d_implicit_gemm_parts.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/loops.h"
#include "runtime/error.h"

namespace ember::kernels::cpu {

namespace implicit_gemm {

const Ukernels* ukernels() {
#if defined(__x86_64__)  // the instruction-set files are built for x86-64 only
  switch (cpu_isa()) {
    case CpuIsa::avx512:
      return &kAvx512Ukernels;
    case CpuIsa::avx2:
      return &kAvx2Ukernels;
    case CpuIsa::baseline:
      break;
  }
#endif
  return nullptr;
}

}  // namespace implicit_gemm

namespace {

// The table for a run that the registry has checked (supports); a stale choice after the cap was
// lowered is an error, never a run of instructions the cap excludes.
const implicit_gemm::Ukernels& ukernels_or_throw() {
  const implicit_gemm::Ukernels* uk = implicit_gemm::ukernels();
  EMBER_CHECK_VALUE(uk != nullptr, "conv2d implicit gemm: needs AVX2+FMA or AVX-512; ",
                    cpu_isa_reason());
  return *uk;
}

}  // namespace

// The cpu has no Tensor Cores: its half convolutions are float32 ones of widened copies (ops).
const char* conv2d_tc_supports(DType, const ConvShape&, ConvDirection) {
  return "the cpu has no Tensor Cores";
}

void conv2d_tc(DType, const ConvShape&, ConvDirection, const void*, const void*, const void*, void*,
               Stream) {
  EMBER_THROW(DTypeError, "conv2d_tc: the cpu has no Tensor Cores");
}

bool conv2d_implicit_gemm_supports(DType t, const ConvShape&, ConvDirection, const char** why) {
  if (implicit_gemm::ukernels() == nullptr) {  // every geometry and direction, given the ISA
    thread_local std::string reason;
    reason = "needs AVX2+FMA or AVX-512; this CPU/cap has baseline (" + cpu_isa_reason() + ")";
    if (why) *why = reason.c_str();
    return false;
  }
  if (t == DType::f32) return true;
  if (why) *why = "float32 only";
  return false;
}

// The micro-kernels' panels and threads are the cpu's own affair (the header): the plan says
// only that they run, and with how much workspace.
ConvGemmPlan conv2d_implicit_gemm_plan(DType t, const ConvShape& s, ConvDirection pass) {
  ConvGemmPlan p;
  p.kernel = ConvGemmKernel::cpu;
  p.workspace_bytes = conv2d_implicit_gemm_workspace_bytes(t, s, pass);
  return p;
}

namespace implicit_gemm {

// Copies image n of x into buf in layout l (Note [Padded images]). The parts of buf that stay
// zero (padding, and columns a shift leaves outside the image) are the same for every image, so
// they are zeroed once, when the buffer is set up; or, given rows [row0, row1) of the copy's
// planes, those rows are written whole, zeros included (Note [Fewer images than threads]).
void fill_image(const ConvShape& s, const ImageLayout& l, const float* x, int64_t n, float* buf,
                int64_t row0, int64_t row1) {
  const bool rows = row1 >= 0;
  for (int64_t q = 0; q < l.copies; ++q) {
    const int64_t shift = l.flat ? q * s.dil_w - s.pad_w : -s.pad_w;
    const int64_t lo = std::max<int64_t>(0, -shift);
    const int64_t hi = l.flat ? std::min(s.ow, s.w - shift) : s.pad_w + s.w;
    for (int64_t c = 0; c < s.c; ++c) {
      float* plane = buf + (q * s.c + c) * l.pitch;
      const float* src = x + (n * s.c + c) * s.h * s.w + lo + shift;
      if (rows)
        fill_plane_rows(plane, l.wp, row0, row1, src, s.w, s.h, s.pad_h, lo, hi - lo);
      else
        for (int64_t ih = 0; ih < s.h && hi > lo; ++ih)
          copy_floats(plane + (s.pad_h + ih) * l.wp + lo, src + ih * s.w, hi - lo);
    }
  }
}

}  // namespace implicit_gemm

using namespace implicit_gemm;

namespace {

// The packed filters' layout (conv2d_implicit_gemm_packed_layout); lanes kernels: AVX-512 only.
const char* packed_layout(const Ukernels& uk, const ConvShape& s) {
  return fwd_lanes_path(uk, s) ? "avx512-lanes" : uk.isa;
}
// A forward thread's workspace in floats.
int64_t fwd_worker_elems(const ConvShape& s) {
  return image_path(s) ? image_layout(s).elems(s) : round_up(taps(s) * kNr, kAlign);
}
// Packed filters: groups x blocks x taps x mr.
int64_t filter_elems(const Ukernels& uk, const ConvShape& s) {
  return round_up(s.groups * filter_blocks(s, uk.mr) * uk.mr * taps(s), kAlign);
}
// Note [Fewer images than threads]
// A batch smaller than the thread count (batch 1 on two threads) would leave threads idle on the
// image path (Note [Padded images]), whose threads own whole images, and took the panel path,
// which gathers every tap of every panel. Instead the threads split each image's panels, and
// each makes its own copy of only the rows of the image that its panels read (the copy's rows
// [row0, row1]: rows_for_panels), zeroing them first: at batch 1 on two threads, ResNet-style
// 3x3 layers spent a sixth of their time in the panel gathers. One shared copy filled by all
// the threads, as before, took a barrier and had each thread read the half of the copy that
// the other had written from the other core's cache: 2-4 us of a 27-30 us layer.
bool shared_image(const ConvShape& s) {
  return !image_path(s) && image_layout(s).ok;
}
int64_t fwd_elems(const Ukernels& uk, const ConvShape& s, int64_t nw) {
  const int64_t filters = filter_elems(uk, s);
  return filters + nw * (shared_image(s) ? image_layout(s).elems(s) : fwd_worker_elems(s));
}
// The copy's rows that panels [pi0, pi1) of an image read, as [row0, row1): the rows of their
// first and last outputs plus the filter's reach (a panel's half past the image's end reads its
// first half again).
std::pair<int64_t, int64_t> rows_for_panels(const ConvShape& s, int64_t pi0, int64_t pi1) {
  const int64_t p = s.oh * s.ow, last = std::min(p, pi1 * kNr) - 1;
  return {pi0 * kNr / s.ow, last / s.ow + s.dil_h * (s.r - 1) + 1};
}
// Backward data as a forward convolution (Note [Panel packing]): dY is the input, dX the output,
// the filters' K and C swap, and the padding becomes dil*(R-1) - pad (stride 1).
ConvShape transposed_shape(const ConvShape& s) {
  ConvShape t = s;
  t.c = s.k, t.h = s.oh, t.w = s.ow;
  t.k = s.c, t.oh = s.h, t.ow = s.w;
  t.pad_h = s.dil_h * (s.r - 1) - s.pad_h;
  t.pad_w = s.dil_w * (s.s - 1) - s.pad_w;
  return t;
}

// Note [Strided backward data]: with stride st the input rows split into st classes by
// (ih + pad) mod st. Class rho receives only the filter rows r with r*dil = rho (mod st), and its
// row i (ih = i*st + rho - pad) reads dY row i - (r*dil - rho)/st. So each pair of row and column
// classes is a stride-1 forward convolution of dY with part of the filter (flipped and
// channel-swapped as for stride 1), whose output is scattered to every st-th row and column of
// dX; a class no filter tap reaches is zero. The sub-filter's taps are evenly spaced, so it is an
// ordinary (dilated, padded) convolution.
struct AxisClass {
  std::vector<int64_t> taps;  // original filter rows, in sub-filter order (decreasing)
  int64_t first = 0, count = 0, pad = 0, dil = 1;  // first class row i, rows, sub-conv geometry
};

AxisClass axis_class(int64_t rho, int64_t stride, int64_t pad, int64_t dil, int64_t taps,
                     int64_t in) {
  AxisClass a;
  for (int64_t r = taps - 1; r >= 0; --r)
    if ((r * dil - rho) % stride == 0) a.taps.push_back(r);
  a.first = ceil_div(pad - rho, stride);
  a.count = std::max<int64_t>(0, ceil_div(in + pad - rho, stride) - a.first);
  if (!a.taps.empty()) {
    const int64_t m0 = (a.taps[0] * dil - rho) / stride;
    a.pad = m0 - a.first;
    if (a.taps.size() > 1) a.dil = m0 - (a.taps[1] * dil - rho) / stride;
  }
  return a;
}

struct DataClass {
  AxisClass rows, cols;
  int64_t rho_h = 0, rho_w = 0;
  ConvShape t;  // the class's forward convolution of dY
  bool active() const { return t.r > 0 && t.s > 0 && t.oh > 0 && t.ow > 0; }
};

std::vector<DataClass> data_classes(const ConvShape& s) {
  std::vector<DataClass> out;
  for (int64_t a = 0; a < s.stride_h; ++a)
    for (int64_t b = 0; b < s.stride_w; ++b) {
      DataClass d;
      d.rho_h = a, d.rho_w = b;
      d.rows = axis_class(a, s.stride_h, s.pad_h, s.dil_h, s.r, s.h);
      d.cols = axis_class(b, s.stride_w, s.pad_w, s.dil_w, s.s, s.w);
      ConvShape& t = d.t;
      t = s;
      t.c = s.k, t.h = s.oh, t.w = s.ow, t.k = s.c;
      t.r = static_cast<int64_t>(d.rows.taps.size()),
      t.s = static_cast<int64_t>(d.cols.taps.size());
      t.oh = d.rows.count, t.ow = d.cols.count;
      t.stride_h = t.stride_w = 1;
      t.pad_h = d.rows.pad, t.pad_w = d.cols.pad, t.dil_h = d.rows.dil, t.dil_w = d.cols.dil;
      out.push_back(d);
    }
  return out;
}

// Strided backward data: the largest class's convolution workspace, then its output.
int64_t strided_data_elems(const Ukernels& uk, const ConvShape& s, int64_t nw) {
  int64_t e = 0, y = 0;
  for (const DataClass& d : data_classes(s))
    if (d.active()) e = std::max(e, fwd_elems(uk, d.t, nw)), y = std::max(y, d.t.y_numel());
  return round_up(e, kAlign) + y;
}

int64_t elems(const Ukernels& uk, const ConvShape& s, ConvDirection pass, int64_t nw) {
  switch (pass) {
    case ConvDirection::forward:  // the filters in lanes: as many filters (K a multiple of
                                  // lane_filters, so of mr) and an image copy per thread
      return fwd_lanes_path(uk, s) ? filter_elems(uk, s) + nw * lane_image_elems(s)
                               : fwd_elems(uk, s, nw);
    case ConvDirection::backward_data:
      return unit_stride(s) ? fwd_elems(uk, transposed_shape(s), nw)
                            : strided_data_elems(uk, s, nw);
    case ConvDirection::backward_filter:
      return bwd_filter_elems(uk, s, nw);
  }
  return 0;
}

int64_t threads_within(const Ukernels& uk, const ConvShape& s, ConvDirection pass,
                       size_t ws_bytes) {
  int64_t nw = threads_for(pass == ConvDirection::backward_data ? transposed_shape(s) : s);
  while (nw > 1 && static_cast<size_t>(elems(uk, s, pass, nw)) * sizeof(float) > ws_bytes) --nw;
  EMBER_CHECK_VALUE(static_cast<size_t>(elems(uk, s, pass, nw)) * sizeof(float) <= ws_bytes,
                    "conv2d implicit gemm: workspace of ", ws_bytes, " bytes is too small (need ",
                    elems(uk, s, pass, nw) * sizeof(float), ")");
  return nw;
}

// Runs pack(gb) for the groups x filter blocks gb of s, spread over the threads when the filters
// are large: at batch 1 the filters of a 512-channel 3 x 3 layer (2.4 M values) are most of a
// call's work.
template <typename Pack>
void for_filter_blocks(int64_t mr, const ConvShape& s, Pack&& pack) {
  const int64_t blocks = s.groups * filter_blocks(s, mr);
  const int64_t nw = omp_in_parallel() || blocks * taps(s) * mr < kParallelPack
                         ? 1
                         : std::min<int64_t>(omp_get_max_threads(), blocks);
  run_workers(nw, [&](int64_t wk) {
    for (int64_t gb = blocks * wk / nw; gb < blocks * (wk + 1) / nw; ++gb) pack(gb);
  });
}

// ap[g][block][t][i] = at(g, block*mr + i, t), the filter value (zero past the group's last
// filter): a transpose of each block, 16 taps at a time so that both sides stay in L1.
template <typename At>
void pack_filters(int64_t mr, const ConvShape& s, At&& at, float* ap) {
  const int64_t kg = s.kg(), nb = filter_blocks(s, mr), d = taps(s);
  for_filter_blocks(mr, s, [&](int64_t gb) {
    const int64_t g = gb / nb, b = gb % nb;
    float* dst = ap + gb * d * mr;
    for (int64_t t0 = 0; t0 < d; t0 += 16)
      for (int64_t i = 0; i < mr; ++i) {
        const int64_t k = b * mr + i, t1 = std::min(d, t0 + 16);
        for (int64_t t = t0; t < t1; ++t) dst[t * mr + i] = k < kg ? at(g, k, t) : 0.0f;
      }
  });
}

// pack_filters for the forward pass, whose filters are w's rows: ap[g][block][t][i] =
// w[g*kg + block*mr + i][t]. The block's mr rows are read side by side so that the writes run in
// order, mr a constant where it is a tile's (6 for AVX2, 8 for AVX-512): at batch 1 the general
// pack_filters, a store mr floats apart per value, was a tenth of a 3 x 3 layer's time.
// A full block goes 8 taps at a time through an 8 x 8 transpose in vector registers (rows past
// Mr zero): the value-by-value loop, 6 strided loads and stores per tap, was a sixth of a 64 ->
// 64 layer's time on 8 x 8 at batch 1 (0.071 -> 0.063 ms with the transpose; 32 -> 32 on
// 16 x 16: 0.056 -> 0.054). Each tap's Mr values are stored as 8, in order, so the next tap's
// store overwrites the extra ones; the last group, whose extra ones would land past the block,
// goes value by value.
typedef float Vec8 __attribute__((vector_size(32), aligned(4), may_alias));

inline void transpose8(Vec8 r[8]) {
  Vec8 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4)
    for (int j = 0; j < 2; ++j) {
      u[i + j] = __builtin_shufflevector(t[i + j], t[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + j + 2] = __builtin_shufflevector(t[i + j], t[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  // u[0..3] hold columns (0, 4), (2, 6), (1, 5), (3, 7) of rows 0-3 in their halves; u[4..7] of
  // rows 4-7.
  const int col[4] = {0, 2, 1, 3};
  for (int j = 0; j < 4; ++j) {
    r[col[j]] = __builtin_shufflevector(u[j], u[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[col[j] + 4] = __builtin_shufflevector(u[j], u[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

template <int Mr>
void pack_filter_block(const float* w, int64_t rows, int64_t d, float* dst) {
  static_assert(Mr <= 8, "one 8 x 8 transpose per 8 taps");
  if (rows < Mr) {
    for (int64_t t = 0; t < d; ++t)
      for (int64_t i = 0; i < Mr; ++i) dst[t * Mr + i] = i < rows ? w[i * d + t] : 0.0f;
    return;
  }
  int64_t t = 0;
  for (; t + 8 < d; t += 8) {  // not the last group (its stores would run past the block)
    Vec8 r[8];
    for (int i = 0; i < 8; ++i)
      r[i] = i < Mr ? *reinterpret_cast<const Vec8*>(w + i * d + t) : Vec8{};
    transpose8(r);
    for (int j = 0; j < 8; ++j) *reinterpret_cast<Vec8*>(dst + (t + j) * Mr) = r[j];
  }
  for (; t < d; ++t)
#pragma GCC unroll 8
    for (int i = 0; i < Mr; ++i) dst[t * Mr + i] = w[i * d + t];
}

void pack_filter_rows(int64_t mr, const ConvShape& s, const float* w, float* ap) {
  const int64_t kg = s.kg(), nb = filter_blocks(s, mr), d = taps(s);
  if (mr != 6 && mr != 8)
    return pack_filters(
        mr, s, [&](int64_t g, int64_t k, int64_t t) { return w[(g * kg + k) * d + t]; }, ap);
  for_filter_blocks(mr, s, [&](int64_t gb) {
    const int64_t g = gb / nb, k0 = gb % nb * mr, rows = std::min(mr, kg - k0);
    const float* src = w + (g * kg + k0) * d;
    float* dst = ap + gb * d * mr;
    if (mr == 6)
      pack_filter_block<6>(src, rows, d, dst);
    else
      pack_filter_block<8>(src, rows, d, dst);
  });
}

// pack_filters for backward data's transposed convolution t of s (transposed_shape), whose filter
// c, tap (k, r, q) is w[g*kg + k][c][R-1-r][S-1-q], read in w's order: for each k, the block's mr
// channels' R*S taps lie together (one run of mr*R*S values) and land in R*S rows of the block
// (the taps-first order above would read them 16 at a time across several filters).
void pack_filters_transposed(int64_t mr, const ConvShape& s, const float* w, float* ap) {
  const ConvShape t = transposed_shape(s);
  const int64_t kg = s.kg(), cg = s.cg(), rs = s.r * s.s, nb = filter_blocks(t, mr), d = taps(t);
  for_filter_blocks(mr, t, [&](int64_t gb) {
    const int64_t g = gb / nb, b = gb % nb;
    float* dst = ap + gb * d * mr;
    for (int64_t k = 0; k < kg; ++k)
      for (int64_t i = 0; i < mr; ++i) {
        const int64_t c = b * mr + i;
        const float* src = w + ((g * kg + k) * cg + c) * rs;
        for (int64_t j = 0; j < rs; ++j)
          dst[(k * rs + rs - 1 - j) * mr + i] = c < cg ? src[j] : 0.0f;
      }
  });
}

// Whether the last filter block of s may be stored straight into y: the micro-kernels write its
// rows rounded up to the kernels' step (the header), so only when they are a multiple of it (the
// last 4 of 16 filters on AVX2).
bool tail_stored_in_place(const Ukernels& uk, const ConvShape& s) {
  return (s.kg() - (filter_blocks(s, uk.mr) - 1) * uk.mr) % uk.tail_step == 0;
}

// Note [Filters split at batch 1]
// With fewer images than threads, the threads split each image's output columns (Note [Fewer
// images than threads]): each writes its share of every output channel. A depthwise layer reads
// each channel whole, its threads splitting the channels, so after such a layer half of every
// thread's input is in the other core's cache, read at a quarter of the speed of its own
// (MobileNet-style: a pointwise layer that widens the channels, then a 3x3 depthwise one). A
// pointwise layer that reads its image in place (1x1, stride 1, no padding: no copy to make)
// and widens it (at least twice the channels out as in) splits its filter blocks instead: each
// thread writes whole channels, the first threads the first ones, as the depthwise layer's
// threads read them. Each thread then reads all of the (smaller) input instead of half of it.
bool split_filters(const ConvShape& s, int64_t blocks, int64_t nw) {
  return s.groups == 1 && s.k >= 2 * s.c && blocks >= nw;
}

// Tap (c, r, q)'s offset in layout l (TapTable).
TapTable tap_offsets(const ConvShape& s, const ImageLayout& l) {
  const int64_t cols = l.flat ? s.c * l.pitch : s.dil_w;  // filter column q: a copy, or a float
  return TapTable(s.cg(), s.r, s.s, l.pitch, s.dil_h * l.wp, cols);
}

// fwd_panels on the prepared-image path. A batch of at least one image per thread: each thread
// owns a contiguous run of images, copied into its own buffer. A smaller one: each thread owns a
// run of every image's panels, copying the rows they read (Note [Fewer images than threads]).
// y is written through `ep`.
void fwd_padded(const Ukernels& uk, const ConvShape& s, const float* x, const float* ap,
                const float* bias, float* y, float* bufs, int64_t nw, const Epilogue& ep) {
  const int64_t d = taps(s), kg = s.kg(), mr = uk.mr, nb = filter_blocks(s, mr), p = s.oh * s.ow;
  const ImageLayout l = image_layout(s);
  const bool shared = shared_image(s);
  const int64_t per = fwd_worker_elems(s);  // sizes depend on the threading context: not inside
  const bool in_place = l.is_image(s);  // read the image itself, not a copy
  const bool tail_in_place = tail_stored_in_place(uk, s);
  const int64_t np = (p + kNr - 1) / kNr;
  // A residual is added as the micro-kernels store, except by a thread owning several images
  // with planes a multiple of 4 KiB apart: y's and z's rows would evict each other from L1 (Note
  // [Skewed planes]) and z come back from memory, so z is added to each image once computed
  // (docs/conv.md). One image per thread finds its z in L2, where the registers cost least.
  const bool per_image = ep.z != nullptr && !shared && p % 1024 == 0 && s.n > nw;
  const Epilogue unclamped(nullptr, nullptr);
  const Epilogue& blocks = per_image ? unclamped : ep;
  // Panels [pi0, pi1) of image n through filter blocks [fb0, fb1), from its copy at xp.
  auto image_panels = [&](const int64_t* off, const float* xp, int64_t n, int64_t pi0,
                          int64_t pi1, int64_t fb0, int64_t fb1) {
    alignas(64) float tile[kMaxMr * kNr];
    for (int64_t g = 0; g < s.groups; ++g) {
      const float* xg = xp + l.tap(s, g, 0, 0, 0);
      for (int64_t p0 = pi0 * kNr; p0 < std::min(p, pi1 * kNr); p0 += kNr) {
        const int64_t cols = std::min(kNr, p - p0), p1 = cols > 16 ? p0 + 16 : p0;
        const float* b0 = xg + l.column(s, p0);
        const float* b1 = xg + l.column(s, p1);
        for (int64_t b = fb0; b < fb1; ++b) {
          const int64_t k0 = g * kg + b * mr, rows = std::min(mr, kg - b * mr);
          float bb[kMaxMr] = {};
          if (bias) std::copy(bias + k0, bias + k0 + rows, bb);
          const float* a = ap + (g * nb + b) * d * mr;
          const int64_t at = (n * s.k + k0) * p + p0;
          if (cols == kNr && (rows == mr || tail_in_place)) {
            uk.fwd_padded(d, rows, a, off, b0, b1, bb, blocks.bounds, blocks.z_at(at),
                          y + at, p);
            continue;
          }
          uk.fwd_padded(d, rows, a, off, b0, b1, bb, blocks.tile_bounds(), nullptr, tile,
                        kNr);
          for (int64_t i = 0; i < rows; ++i) blocks.row(y, at + i * p, tile + i * kNr, cols);
        }
      }
    }
  };
  if (shared && in_place && split_filters(s, nb, nw)) {  // Note [Filters split at batch 1]
    run_workers(nw, [&](int64_t wk) {
      const int64_t fb0 = nb * wk / nw, fb1 = nb * (wk + 1) / nw;
      const TapTable off = tap_offsets(s, l);
      for (int64_t n = 0; n < s.n; ++n)
        image_panels(off.data(), x + n * s.c * s.h * s.w, n, 0, np, fb0, fb1);
    });
    return;
  }
  if (shared) {  // Note [Fewer images than threads]
    run_workers(nw, [&](int64_t wk) {
      const int64_t pi0 = np * wk / nw, pi1 = np * (wk + 1) / nw;
      if (pi0 == pi1) return;
      const auto [row0, row1] = rows_for_panels(s, pi0, pi1);
      float* buf = bufs + wk * l.elems(s);
      const TapTable off = tap_offsets(s, l);
      for (int64_t n = 0; n < s.n; ++n) {
        if (!in_place) fill_image(s, l, x, n, buf, row0, row1);
        image_panels(off.data(), in_place ? x + n * s.c * s.h * s.w : buf, n, pi0, pi1, 0, nb);
      }
    });
    return;
  }
  run_workers(nw, [&](int64_t wk) {
    float* buf = bufs + wk * per;
    if (!in_place) std::fill(buf, buf + l.elems(s), 0.0f);
    const TapTable off = tap_offsets(s, l);
    for (int64_t n = s.n * wk / nw; n < s.n * (wk + 1) / nw; ++n) {
      const float* xp = buf;
      if (in_place)
        xp = x + n * s.c * s.h * s.w;
      else
        fill_image(s, l, x, n, buf);
      image_panels(off.data(), xp, n, 0, np, 0, nb);
      if (per_image) ep.row(y, n * s.k * p, y + n * s.k * p, s.k * p);
    }
  });
}

// y = conv(x) with the packed filters `ap`, over `nw` threads with panel buffers at `bufs`.
// y is written through `ep`.
void fwd_panels(const Ukernels& uk, const ConvShape& s, const float* x, const float* ap,
                const float* bias, float* y, float* bufs, int64_t nw, const Epilogue& ep) {
  const int64_t d = taps(s), kg = s.kg(), mr = uk.mr, nb = filter_blocks(s, mr), p = s.oh * s.ow;
  const int64_t np = panels(s), total = columns(s);
  const int64_t per = fwd_worker_elems(s);  // sizes depend on the threading context: not inside
  const bool tail_in_place = tail_stored_in_place(uk, s);
  auto worker = [&](int64_t wk) {
    float* bp = bufs + wk * per;
    alignas(64) float tile[kMaxMr * kNr];
    Run runs[kNr];
    for (int64_t pi = np * wk / nw; pi < np * (wk + 1) / nw; ++pi) {
      const int nr = panel_runs(s, pi * kNr, runs);
      const bool whole = runs[0].n == runs[nr - 1].n && total - pi * kNr >= kNr;
      const int64_t p0 = runs[0].oh * s.ow + runs[0].ow;
      for (int64_t g = 0; g < s.groups; ++g) {
        uk.pack_panel(s, x, g, runs, nr, bp);
        for (int64_t b = 0; b < nb; ++b) {
          const int64_t k0 = g * kg + b * mr, rows = std::min(mr, kg - b * mr);
          float bb[kMaxMr] = {};
          if (bias) std::copy(bias + k0, bias + k0 + rows, bb);
          const float* a = ap + (g * nb + b) * d * mr;
          if (whole && (rows == mr || tail_in_place)) {
            const int64_t at = (runs[0].n * s.k + k0) * p + p0;
            uk.fwd(d, rows, a, bp, bb, ep.bounds, ep.z_at(at), y + at, p);
            continue;
          }
          uk.fwd(d, rows, a, bp, bb, ep.tile_bounds(), nullptr, tile, kNr);
          for (int64_t i = 0; i < rows; ++i)
            for (int u = 0; u < nr; ++u)
              ep.row(y, (runs[u].n * s.k + k0 + i) * p + runs[u].oh * s.ow + runs[u].ow,
                     tile + i * kNr + runs[u].dst, runs[u].len);
        }
      }
    }
  };
  run_workers(nw, worker);
}

void bwd_data_strided(const Ukernels& uk, const ConvShape& s, const float* dy, const float* w,
                      float* dx, void* workspace, int64_t nw) {
  const std::vector<DataClass> classes = data_classes(s);
  int64_t e = 0;
  for (const DataClass& d : classes)
    if (d.active()) e = std::max(e, fwd_elems(uk, d.t, nw));
  float* ap = static_cast<float*>(workspace);
  float* out = ap + round_up(e, kAlign);
  const int64_t kg = s.kg(), cg = s.cg(), rs = s.r * s.s, hw = s.h * s.w;
  for (const DataClass& d : classes) {
    const ConvShape& t = d.t;
    if (d.active()) {  // Note [Strided backward data]
      const int64_t tr = t.r * t.s;
      pack_filters(
          uk.mr, t,
          [&](int64_t g, int64_t c, int64_t tap) {
            const int64_t k = tap / tr, r = d.rows.taps[tap % tr / t.s], q = d.cols.taps[tap % t.s];
            return w[((g * kg + k) * cg + c) * rs + r * s.s + q];
          },
          ap);
      float* bufs = ap + filter_elems(uk, t);
      if (image_layout(t).ok)
        fwd_padded(uk, t, dy, ap, nullptr, out, bufs, nw, Epilogue(nullptr, nullptr));
      else
        fwd_panels(uk, t, dy, ap, nullptr, out, bufs, nw, Epilogue(nullptr, nullptr));
    }
    // Scatter the class's rows and columns into dX (zero where no tap reaches).
    const int64_t oh = d.rows.count, ow = d.cols.count;
    for (int64_t nc = 0; nc < s.n * s.c; ++nc)
      for (int64_t i = 0; i < oh; ++i) {
        float* row = dx + nc * hw + ((d.rows.first + i) * s.stride_h + d.rho_h - s.pad_h) * s.w +
                     d.cols.first * s.stride_w + d.rho_w - s.pad_w;
        const float* src = out + (nc * oh + i) * ow;
        if (d.active())
          for (int64_t j = 0; j < ow; ++j) row[j * s.stride_w] = src[j];
        else
          for (int64_t j = 0; j < ow; ++j) row[j * s.stride_w] = 0.0f;
      }
  }
}

// Work in vector multiply-adds of the table's width, as the header says.
double work(const Ukernels& uk, const ConvShape& s, ConvDirection pass) {
  if (pass == ConvDirection::backward_data && !unit_stride(s)) {  // the classes, plus scattering dX
    double w = 2.0 * double(s.x_numel());                         // strided scalar stores
    for (const DataClass& d : data_classes(s))
      if (d.active()) w += work(uk, d.t, ConvDirection::forward);
    return w;
  }
  const ConvShape t = pass == ConvDirection::backward_data ? transposed_shape(s) : s;
  if (pass == ConvDirection::backward_filter) return bwd_filter_work(uk, t);
  // The filter rows computed: whole blocks, then the last in steps (Note [Blocks of fewer
  // filters] in kernels/cpu/conv2d_implicit_gemm_avx2.cpp).
  const int64_t kg = t.kg(), tail = kg % uk.mr;
  const double d = double(taps(t));
  const double kpad = double(kg - tail + (tail ? round_up(tail, uk.tail_step) : 0));
  // Per column: copied once (Note [Padded images]), or gathered per tap.
  const bool lanes = pass == ConvDirection::forward && fwd_lanes_path(uk, t);
  const double gather = image_layout(t).ok || lanes ? d / 16.0 : d;
  // The whole panels' multiply-adds and gathers, and the filters packed (one unit per value);
  // the threads share both.
  const double packed = double(t.groups * round_up(kg, uk.mr)) * d;
  return (computed_columns(t) * (d * kpad / double(uk.lanes) + gather) + packed) /
         double(threads_for(t));
}

}  // namespace

double conv2d_implicit_gemm_work(const ConvShape& s, ConvDirection pass) {
  const Ukernels* uk = ukernels();
  return uk ? work(*uk, s, pass) : 0.0;
}

const char* conv2d_implicit_gemm_isa() {
  const Ukernels* uk = ukernels();
  return uk ? uk->isa : nullptr;
}

size_t conv2d_implicit_gemm_workspace_bytes(DType, const ConvShape& s, ConvDirection pass) {
  const Ukernels* uk = ukernels();
  if (uk == nullptr) return 0;
  const int64_t nw = threads_for(pass == ConvDirection::backward_data ? transposed_shape(s) : s);
  return static_cast<size_t>(elems(*uk, s, pass, nw)) * sizeof(float);
}

void conv2d_fwd_implicit_gemm(DType, const ConvShape& s, const void* x_v, const void* w_v,
                              const void* bias_v, void* y_v, void* workspace,
                              size_t workspace_bytes, Stream) {
  conv2d_fwd_implicit_gemm_clamped(s, x_v, w_v, bias_v, y_v, workspace, workspace_bytes, nullptr,
                                   nullptr);
}

void conv2d_fwd_implicit_gemm_clamped(const ConvShape& s, const void* x_v, const void* w_v,
                                      const void* bias_v, void* y_v, void* workspace,
                                      size_t workspace_bytes, const OutputClamp* clamp,
                                      const float* residual, const float* packed,
                                      const char* packed_isa) {
  const Ukernels& uk = ukernels_or_throw();
  const float *x = static_cast<const float*>(x_v), *w = static_cast<const float*>(w_v);
  const float* bias = static_cast<const float*>(bias_v);
  float* y = static_cast<float*>(y_v);
  const int64_t nw = threads_within(uk, s, ConvDirection::forward, workspace_bytes);
  float* filters = static_cast<float*>(workspace);
  float* bufs = filters + filter_elems(uk, s);
  const bool prepacked = packed != nullptr && packed_isa != nullptr &&
                         std::strcmp(packed_isa, packed_layout(uk, s)) == 0;
  const bool lanes = fwd_lanes_path(uk, s);
  if (!prepacked)
    lanes ? pack_filter_lanes(uk, s, w, filters) : pack_filter_rows(uk.mr, s, w, filters);
  const float* ap = prepacked ? packed : filters;
  const Epilogue ep(clamp, residual);
  if (lanes) return fwd_lanes(uk, s, x, ap, bias, y, bufs, nw, ep);
  if (image_layout(s).ok) return fwd_padded(uk, s, x, ap, bias, y, bufs, nw, ep);
  fwd_panels(uk, s, x, ap, bias, y, bufs, nw, ep);
}

int64_t conv2d_implicit_gemm_packed_filter_elems(const ConvShape& s) {
  return filter_elems(ukernels_or_throw(), s);
}

const char* conv2d_implicit_gemm_packed_layout(const ConvShape& s) {
  return packed_layout(ukernels_or_throw(), s);
}

void conv2d_implicit_gemm_pack_filters(const ConvShape& s, const void* w, float* packed) {
  const Ukernels& uk = ukernels_or_throw();
  if (fwd_lanes_path(uk, s)) return pack_filter_lanes(uk, s, static_cast<const float*>(w), packed);
  pack_filter_rows(uk.mr, s, static_cast<const float*>(w), packed);
}

void conv2d_bwd_data_implicit_gemm(DType, const ConvShape& s, const void* dy_v, const void* w_v,
                                   void* dx_v, void* workspace, size_t workspace_bytes, Stream) {
  const Ukernels& uk = ukernels_or_throw();
  const float *dy = static_cast<const float*>(dy_v), *w = static_cast<const float*>(w_v);
  float* dx = static_cast<float*>(dx_v);
  const int64_t nw = threads_within(uk, s, ConvDirection::backward_data, workspace_bytes);
  if (!unit_stride(s)) return bwd_data_strided(uk, s, dy, w, dx, workspace, nw);
  const ConvShape t = transposed_shape(s);
  float* ap = static_cast<float*>(workspace);
  pack_filters_transposed(uk.mr, s, w, ap);
  float* bufs = ap + filter_elems(uk, t);
  const Epilogue store(nullptr, nullptr);
  if (image_layout(t).ok) return fwd_padded(uk, t, dy, ap, nullptr, dx, bufs, nw, store);
  fwd_panels(uk, t, dy, ap, nullptr, dx, bufs, nw, store);
}

void conv2d_bwd_filter_implicit_gemm(DType, const ConvShape& s, const void* dy, const void* x,
                                     void* dw, void* workspace, size_t workspace_bytes, Stream) {
  const Ukernels& uk = ukernels_or_throw();
  const int64_t nw = threads_within(uk, s, ConvDirection::backward_filter, workspace_bytes);
  bwd_filter(uk, s, static_cast<const float*>(dy), static_cast<const float*>(x),
             static_cast<float*>(dw), static_cast<float*>(workspace), nw);
}

}  // namespace ember::kernels::cpu

// Implicit-GEMM convolution for float32 on AVX-512. With D = (C/G)*R*S filter taps and the
// output positions of all images numbered j = (n*OH + oh)*OW + ow, the columns matrix col(X) is
// D x (N*OH*OW); it is cut into panels of kNr = 32 columns and never stored whole.
//
// Where a tap's values for 16 consecutive columns can be 16 consecutive floats of a per-thread
// copy of the image (unit stride; Note [Padded images]), the micro-kernels read that copy at a
// per-tap offset. Elsewhere the panels are gathered from the image:
//
// Note [Panel packing]: a panel's columns split into runs that lie in one output row of one image
// (one run when OW >= 32, four when OW = 8). For tap (c, r, q) a run reads one input row at a
// fixed shift (every other float for width stride 2), so row t = (c*R + r)*S + q of the packed
// panel is built in two registers from vector loads, the lanes outside the image zeroed, and
// written with two full stores. The panel (D x 32 floats) stays in L1/L2 while every filter tile
// uses it, so nothing is written to memory but the panel and the output.
//
// Forward: a kMr x kNr tile of Y (8 filters x 32 columns, 16 accumulators) is the packed filter
// block (D x 8, one broadcast per tap and filter) times the panel (two vector loads per tap).
// Backward filter: a 24/NK x 16*NK tile of dWᵀ (taps x filters) accumulates the panel's 32
// columns: one broadcast from the panel per tap and column, times dY's 32 x K block transposed;
// or, from an image copy, 4 filters x 6 taps in column lanes (Note [Filter gradient in column
// lanes]).
#include "kernels/cpu/conv2d_implicit_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/error.h"

#if defined(__AVX512F__)
#include "kernels/cpu/conv2d_implicit_gemm_parts.h"
#include "kernels/cpu/loops.h"
#endif

namespace ember::kernels::cpu {

bool conv2d_implicit_gemm_supports(DType t, const ConvShape& s, ConvDirection pass, const char** why) {
#if defined(__AVX512F__)
  (void)s, (void)pass;  // every geometry and direction
  if (t == DType::f32) return true;
  if (why) *why = "float32 only";
  return false;
#else
  (void)t, (void)s, (void)pass;
  if (why) *why = "built without AVX-512";
  return false;
#endif
}

// The micro-kernels' panels and threads are the cpu's own affair (the header): the plan says
// only that they run, and with how much workspace.
ConvGemmPlan conv2d_implicit_gemm_plan(DType t, const ConvShape& s, ConvDirection pass) {
  ConvGemmPlan p;
  p.kernel = ConvGemmKernel::cpu;
  p.workspace_bytes = conv2d_implicit_gemm_workspace_bytes(t, s, pass);
  return p;
}

#if defined(__AVX512F__)
namespace implicit_gemm {

// bp (taps x kNr) = the panel's columns of col(X) for group g (Note [Panel packing]). Columns
// past the last run are zero. Each panel row is built in two registers and written with two full
// stores. Masked loads and stores are slow on some AVX-512 machines (this one among them), so a
// partial run loads a whole vector and blends the lanes it needs, falling back to a masked load
// only where a whole vector would reach outside the image buffer. Taps run q-major so that each
// run's masks and offsets are worked out once per q, not once per tap.
void pack_panel(const ConvShape& s, const float* x, int64_t g, const Run* runs, int nruns,
                float* bp) {
  const int64_t cg = s.cg(), hw = s.h * s.w, sw = s.stride_w;
  const float* const x_end = x + s.x_numel();
  const __m512i evens =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const float* img[kNr];
  int64_t ih0[kNr], off[kNr][2];
  __mmask16 use[kNr][2], in[kNr][2][2];
  for (int i = 0; i < nruns; ++i) {
    img[i] = x + (runs[i].n * s.c + g * cg) * hw;
    ih0[i] = runs[i].oh * s.stride_h - s.pad_h;
  }
  // A whole vector (or two) at p stays inside the image buffer.
  auto whole = [&](const float* p, int64_t n) { return p >= x && p + n <= x_end; };
  for (int64_t q = 0; q < s.s; ++q) {
    // Lane j of half v (panel column 16v + j) of run i reads source column off + j (unit
    // stride) or off + 2j (stride 2, after keeping the even floats of 32); `use` holds the lanes
    // of the run whose source column lies inside the row, `in` the source floats that do.
    for (int i = 0; i < nruns; ++i) {
      const int64_t d = runs[i].dst, len = runs[i].len;
      const int64_t iw = runs[i].ow * sw - s.pad_w + q * s.dil_w;
      for (int v = 0; v < 2; ++v) {
        const int64_t step = std::min<int64_t>(sw, 2), o = iw + (16 * v - d) * step;
        off[i][v] = o;
        use[i][v] = lanes(d - 16 * v, d + len - 16 * v) &
                    lanes(ceil_div(-o, step), ceil_div(s.w - o, step));
        in[i][v][0] = lanes(-o, s.w - o);
        in[i][v][1] = lanes(-o - 16, s.w - o - 16);
      }
    }
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < s.r; ++r) {
        float* row = bp + ((c * s.r + r) * s.s + q) * kNr;
        if (sw > 2) {
          std::fill(row, row + kNr, 0.0f);
          for (int i = 0; i < nruns; ++i) {
            const int64_t ih = ih0[i] + r * s.dil_h;
            if (static_cast<uint64_t>(ih) >= static_cast<uint64_t>(s.h)) continue;
            const float* src = img[i] + c * hw + ih * s.w;
            const int64_t iw = runs[i].ow * sw - s.pad_w + q * s.dil_w;
            for (int64_t l = 0; l < runs[i].len; ++l) {
              const int64_t col = iw + l * sw;
              if (col >= 0 && col < s.w) row[runs[i].dst + l] = src[col];
            }
          }
          continue;
        }
        __m512 half[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
        for (int i = 0; i < nruns; ++i) {
          const int64_t ih = ih0[i] + r * s.dil_h;
          if (static_cast<uint64_t>(ih) >= static_cast<uint64_t>(s.h)) continue;
          const float* src = img[i] + c * hw + ih * s.w;
          for (int v = 0; v < 2; ++v) {
            const __mmask16 m = use[i][v];
            if (!m) continue;
            const float* p = src + off[i][v];
            __m512 val;
            if (sw == 1) {
              if (m == 0xFFFF) {
                half[v] = _mm512_loadu_ps(p);
                continue;
              }
              val = whole(p, 16) ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(in[i][v][0], p);
            } else {
              const bool w = whole(p, 32);
              const __m512 lo = w ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(in[i][v][0], p);
              const __m512 hi =
                  w ? _mm512_loadu_ps(p + 16) : _mm512_maskz_loadu_ps(in[i][v][1], p + 16);
              val = _mm512_permutex2var_ps(lo, evens, hi);
            }
            half[v] = _mm512_mask_mov_ps(half[v], m, val);
          }
        }
        _mm512_storeu_ps(row, half[0]);
        _mm512_storeu_ps(row + 16, half[1]);
      }
  }
}

// Copies image n of x into buf in layout l (Note [Padded images]). The parts of buf that stay
// zero (padding, and columns a shift leaves outside the image) are the same for every image, so
// they are zeroed once, when the buffer is set up.
void fill_image(const ConvShape& s, const ImageLayout& l, const float* x, int64_t n, float* buf) {
  for (int64_t q = 0; q < l.copies; ++q) {
    const int64_t shift = q * s.dil_w - s.pad_w;
    const int64_t lo = std::max<int64_t>(0, -shift), hi = std::min(s.ow, s.w - shift);
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t ih = 0; ih < s.h; ++ih) {
        float* dst = buf + ((q * s.c + c) * l.hp + s.pad_h + ih) * l.wp;
        const float* src = x + ((n * s.c + c) * s.h + ih) * s.w;
        if (!l.flat)
          std::memcpy(dst + s.pad_w, src, sizeof(float) * s.w);
        else if (hi > lo)
          std::memcpy(dst + lo, src + lo + shift, sizeof(float) * (hi - lo));
      }
  }
}

}  // namespace implicit_gemm

using namespace implicit_gemm;

namespace {

// Workspace in floats for `nw` threads.
int64_t fwd_worker_elems(const ConvShape& s) {
  return image_path(s) ? image_layout(s).elems(s) : round_up(taps(s) * kNr, kAlign);
}
int64_t fwd_elems(const ConvShape& s, int64_t nw) {
  const int64_t filters = round_up(s.groups * filter_blocks(s) * kMr * taps(s), kAlign);
  return filters + nw * fwd_worker_elems(s);
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
int64_t strided_data_elems(const ConvShape& s, int64_t nw) {
  int64_t e = 0, y = 0;
  for (const DataClass& d : data_classes(s))
    if (d.active()) e = std::max(e, fwd_elems(d.t, nw)), y = std::max(y, d.t.y_numel());
  return round_up(e, kAlign) + y;
}

int64_t elems(const ConvShape& s, ConvDirection pass, int64_t nw) {
  switch (pass) {
    case ConvDirection::forward:
      return fwd_elems(s, nw);
    case ConvDirection::backward_data:
      return unit_stride(s) ? fwd_elems(transposed_shape(s), nw) : strided_data_elems(s, nw);
    case ConvDirection::backward_filter:
      return bwd_filter_elems(s, nw);
  }
  return 0;
}

int64_t threads_within(const ConvShape& s, ConvDirection pass, size_t ws_bytes) {
  int64_t nw = threads_for(pass == ConvDirection::backward_data ? transposed_shape(s) : s);
  while (nw > 1 && static_cast<size_t>(elems(s, pass, nw)) * sizeof(float) > ws_bytes) --nw;
  EMBER_CHECK_VALUE(static_cast<size_t>(elems(s, pass, nw)) * sizeof(float) <= ws_bytes,
                    "conv2d implicit gemm: workspace of ", ws_bytes, " bytes is too small (need ",
                    elems(s, pass, nw) * sizeof(float), ")");
  return nw;
}

// ap[g][block][t][i] = filter value of filter block*kMr + i (zero past the group's last filter).
template <typename At>
void pack_filters(const ConvShape& s, At&& at, float* ap) {
  const int64_t kg = s.kg(), nb = filter_blocks(s), d = taps(s);
  for (int64_t g = 0; g < s.groups; ++g)
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t t = 0; t < d; ++t)
        for (int64_t i = 0; i < kMr; ++i) {
          const int64_t k = b * kMr + i;
          ap[((g * nb + b) * d + t) * kMr + i] = k < kg ? at(g, k, t) : 0.0f;
        }
}

// c (kMr x kNr, rows ldc apart) = bias + a (d x kMr, packed) * b (d x kNr, packed).
inline void kernel_fwd(int64_t d, const float* a, const float* b, const float* bias, float* c,
                       int64_t ldc) {
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm512_set1_ps(bias[i]);
  for (int64_t t = 0; t < d; ++t) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMr;
    b += kNr;
  }
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}

// As kernel_fwd, with the panel's two halves read straight from padded images at b0 and b1 plus
// the tap's offset (Note [Padded images]).
inline void kernel_fwd_padded(int64_t d, const float* a, const int64_t* off, const float* b0p,
                              const float* b1p, const float* bias, float* c, int64_t ldc) {
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm512_set1_ps(bias[i]);
  for (int64_t t = 0; t < d; ++t) {
    const __m512 b0 = _mm512_loadu_ps(b0p + off[t]), b1 = _mm512_loadu_ps(b1p + off[t]);
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMr;
  }
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}

// fwd_panels on the prepared-image path: each thread owns a contiguous run of images.
void fwd_padded(const ConvShape& s, const float* x, const float* ap, const float* bias, float* y,
                float* bufs, int64_t nw) {
  const int64_t d = taps(s), kg = s.kg(), nb = filter_blocks(s), p = s.oh * s.ow;
  const ImageLayout l = image_layout(s);
  std::vector<int64_t> off(d);
  for (int64_t c = 0, t = 0; c < s.cg(); ++c)
    for (int64_t r = 0; r < s.r; ++r)
      for (int64_t q = 0; q < s.s; ++q) off[t++] = l.tap(s, 0, c, r, q);
  const int64_t per = fwd_worker_elems(s);  // sizes depend on the threading context: not inside
  auto worker = [&](int64_t wk) {
    float* xp = bufs + wk * per;
    std::fill(xp, xp + l.elems(s), 0.0f);
    alignas(64) float tile[kMr * kNr];
    for (int64_t n = s.n * wk / nw; n < s.n * (wk + 1) / nw; ++n) {
      fill_image(s, l, x, n, xp);
      for (int64_t g = 0; g < s.groups; ++g) {
        const float* xg = xp + l.tap(s, g, 0, 0, 0);
        for (int64_t p0 = 0; p0 < p; p0 += kNr) {
          const int64_t cols = std::min(kNr, p - p0), p1 = cols > 16 ? p0 + 16 : p0;
          const float* b0 = xg + l.column(s, p0);
          const float* b1 = xg + l.column(s, p1);
          for (int64_t b = 0; b < nb; ++b) {
            const int64_t k0 = g * kg + b * kMr, rows = std::min(kMr, kg - b * kMr);
            float bb[kMr] = {};
            if (bias) std::copy(bias + k0, bias + k0 + rows, bb);
            const float* a = ap + (g * nb + b) * d * kMr;
            float* out = y + (n * s.k + k0) * p + p0;
            if (cols == kNr && rows == kMr) {
              kernel_fwd_padded(d, a, off.data(), b0, b1, bb, out, p);
              continue;
            }
            kernel_fwd_padded(d, a, off.data(), b0, b1, bb, tile, kNr);
            for (int64_t i = 0; i < rows; ++i)
              std::memcpy(out + i * p, tile + i * kNr, sizeof(float) * cols);
          }
        }
      }
    }
  };
  run_workers(nw, worker);
}

// y = conv(x) with the packed filters `ap`, over `nw` threads with panel buffers at `bufs`.
void fwd_panels(const ConvShape& s, const float* x, const float* ap, const float* bias, float* y,
                float* bufs, int64_t nw) {
  const int64_t d = taps(s), kg = s.kg(), nb = filter_blocks(s), p = s.oh * s.ow;
  const int64_t np = panels(s), total = columns(s);
  const int64_t per = fwd_worker_elems(s);  // sizes depend on the threading context: not inside
  auto worker = [&](int64_t wk) {
    float* bp = bufs + wk * per;
    alignas(64) float tile[kMr * kNr];
    Run runs[kNr];
    for (int64_t pi = np * wk / nw; pi < np * (wk + 1) / nw; ++pi) {
      const int nr = panel_runs(s, pi * kNr, runs);
      const bool whole = runs[0].n == runs[nr - 1].n && total - pi * kNr >= kNr;
      const int64_t p0 = runs[0].oh * s.ow + runs[0].ow;
      for (int64_t g = 0; g < s.groups; ++g) {
        pack_panel(s, x, g, runs, nr, bp);
        for (int64_t b = 0; b < nb; ++b) {
          const int64_t k0 = g * kg + b * kMr, rows = std::min(kMr, kg - b * kMr);
          float bb[kMr] = {};
          if (bias) std::copy(bias + k0, bias + k0 + rows, bb);
          const float* a = ap + (g * nb + b) * d * kMr;
          if (whole && rows == kMr) {
            kernel_fwd(d, a, bp, bb, y + (runs[0].n * s.k + k0) * p + p0, p);
            continue;
          }
          kernel_fwd(d, a, bp, bb, tile, kNr);
          for (int64_t i = 0; i < rows; ++i)
            for (int u = 0; u < nr; ++u)
              std::memcpy(y + (runs[u].n * s.k + k0 + i) * p + runs[u].oh * s.ow + runs[u].ow,
                          tile + i * kNr + runs[u].dst, sizeof(float) * runs[u].len);
        }
      }
    }
  };
  run_workers(nw, worker);
}

void bwd_data_strided(const ConvShape& s, const float* dy, const float* w, float* dx,
                      void* workspace, int64_t nw) {
  const std::vector<DataClass> classes = data_classes(s);
  int64_t e = 0;
  for (const DataClass& d : classes)
    if (d.active()) e = std::max(e, fwd_elems(d.t, nw));
  float* ap = static_cast<float*>(workspace);
  float* out = ap + round_up(e, kAlign);
  const int64_t kg = s.kg(), cg = s.cg(), rs = s.r * s.s, hw = s.h * s.w;
  for (const DataClass& d : classes) {
    const ConvShape& t = d.t;
    if (d.active()) {  // Note [Strided backward data]
      const int64_t tr = t.r * t.s;
      pack_filters(
          t,
          [&](int64_t g, int64_t c, int64_t tap) {
            const int64_t k = tap / tr, r = d.rows.taps[tap % tr / t.s], q = d.cols.taps[tap % t.s];
            return w[((g * kg + k) * cg + c) * rs + r * s.s + q];
          },
          ap);
      float* bufs = ap + round_up(t.groups * filter_blocks(t) * kMr * taps(t), kAlign);
      if (image_path(t))
        fwd_padded(t, dy, ap, nullptr, out, bufs, nw);
      else
        fwd_panels(t, dy, ap, nullptr, out, bufs, nw);
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

}  // namespace

double conv2d_implicit_gemm_work(const ConvShape& s, ConvDirection pass) {
  if (pass == ConvDirection::backward_data && !unit_stride(s)) {  // the classes, plus scattering dX
    double work = 2.0 * double(s.x_numel());            // strided scalar stores, zeros included
    for (const DataClass& d : data_classes(s))
      if (d.active()) work += conv2d_implicit_gemm_work(d.t, ConvDirection::forward);
    return work;
  }
  const ConvShape t = pass == ConvDirection::backward_data ? transposed_shape(s) : s;
  const double cols = double(t.n) * t.oh * t.ow * t.groups, d = double(taps(t));
  const double gather = image_path(t) ? d / 16.0 : d;  // per column: copy once, or gather per tap
  if (pass == ConvDirection::backward_filter) return bwd_filter_work(t);
  return cols * (d * round_up(t.kg(), kMr) / 16.0 + gather);
}

size_t conv2d_implicit_gemm_workspace_bytes(DType, const ConvShape& s, ConvDirection pass) {
  const int64_t nw = threads_for(pass == ConvDirection::backward_data ? transposed_shape(s) : s);
  return static_cast<size_t>(elems(s, pass, nw)) * sizeof(float);
}

void conv2d_fwd_implicit_gemm(DType, const ConvShape& s, const void* x_v, const void* w_v,
                              const void* bias_v, void* y_v, void* workspace,
                              size_t workspace_bytes, Stream) {
  const float *x = static_cast<const float*>(x_v), *w = static_cast<const float*>(w_v);
  const float* bias = static_cast<const float*>(bias_v);
  float* y = static_cast<float*>(y_v);
  const int64_t nw = threads_within(s, ConvDirection::forward, workspace_bytes);
  float* ap = static_cast<float*>(workspace);
  const int64_t kg = s.kg(), d = taps(s);
  pack_filters(
      s, [&](int64_t g, int64_t k, int64_t t) { return w[(g * kg + k) * d + t]; }, ap);
  float* bufs = ap + round_up(s.groups * filter_blocks(s) * kMr * d, kAlign);
  if (image_path(s)) return fwd_padded(s, x, ap, bias, y, bufs, nw);
  fwd_panels(s, x, ap, bias, y, bufs, nw);
}

void conv2d_bwd_data_implicit_gemm(DType, const ConvShape& s, const void* dy_v, const void* w_v,
                                   void* dx_v, void* workspace, size_t workspace_bytes, Stream) {
  const float *dy = static_cast<const float*>(dy_v), *w = static_cast<const float*>(w_v);
  float* dx = static_cast<float*>(dx_v);
  const int64_t nw = threads_within(s, ConvDirection::backward_data, workspace_bytes);
  if (!unit_stride(s)) return bwd_data_strided(s, dy, w, dx, workspace, nw);
  const ConvShape t = transposed_shape(s);
  float* ap = static_cast<float*>(workspace);
  // Filter c of the transposed convolution, tap (k, r, q): w[k][c][R-1-r][S-1-q] of the group.
  const int64_t kg = s.kg(), cg = s.cg(), rs = s.r * s.s;
  pack_filters(
      t,
      [&](int64_t g, int64_t c, int64_t tap) {
        const int64_t k = tap / rs, flip = rs - 1 - tap % rs;
        return w[((g * kg + k) * cg + c) * rs + flip];
      },
      ap);
  float* bufs = ap + round_up(t.groups * filter_blocks(t) * kMr * taps(t), kAlign);
  if (image_path(t)) return fwd_padded(t, dy, ap, nullptr, dx, bufs, nw);
  fwd_panels(t, dy, ap, nullptr, dx, bufs, nw);
}

void conv2d_bwd_filter_implicit_gemm(DType, const ConvShape& s, const void* dy, const void* x,
                                     void* dw, void* workspace, size_t workspace_bytes, Stream) {
  const int64_t nw = threads_within(s, ConvDirection::backward_filter, workspace_bytes);
  bwd_filter(s, static_cast<const float*>(dy), static_cast<const float*>(x), static_cast<float*>(dw),
             static_cast<float*>(workspace), nw);
}

#else  // no AVX-512: conv2d_implicit_gemm_supports says so, and these are never called.

size_t conv2d_implicit_gemm_workspace_bytes(DType, const ConvShape&, ConvDirection) {
  return 0;
}
double conv2d_implicit_gemm_work(const ConvShape&, ConvDirection) {
  return 0.0;
}

void conv2d_fwd_implicit_gemm(DType, const ConvShape&, const void*, const void*, const void*, void*,
                              void*, size_t, Stream) {
  EMBER_THROW(ValueError, "conv2d implicit gemm: built without AVX-512");
}
void conv2d_bwd_data_implicit_gemm(DType, const ConvShape&, const void*, const void*, void*, void*,
                                   size_t, Stream) {
  EMBER_THROW(ValueError, "conv2d implicit gemm: built without AVX-512");
}
void conv2d_bwd_filter_implicit_gemm(DType, const ConvShape&, const void*, const void*, void*,
                                     void*, size_t, Stream) {
  EMBER_THROW(ValueError, "conv2d implicit gemm: built without AVX-512");
}

#endif

}  // namespace ember::kernels::cpu

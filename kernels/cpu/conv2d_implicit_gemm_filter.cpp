// The filter gradient of the implicit-GEMM convolution (kernels/cpu/conv2d_implicit_gemm.h):
// dWᵀ accumulated either in column lanes straight from a per-thread image copy, or in taps x
// filters tiles from packed 32-column panels and dY transposed. Float32, AVX-512 builds only.
#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__AVX512F__)
#include "kernels/cpu/conv2d_implicit_gemm_parts.h"
#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu::implicit_gemm {

namespace {

int64_t kpad(const ConvShape& s) {
  return round_up(s.kg(), 16);
}
// Per backward-filter thread on the panel path: its partial dWᵀ (groups x taps x kpad), one
// packed panel and dY transposed: a panel's worth, or on the prepared-image path a whole image's
// (plus a half panel of zero rows) and the image copy.
int64_t bwd_filter_part_elems(const ConvShape& s) {
  return round_up(s.groups * round_up(taps(s), kTapPad) * kpad(s), kAlign);
}
int64_t bwd_filter_dyt_rows(const ConvShape& s) {
  return image_path(s) ? s.oh * s.ow + 16 : kNr;
}
int64_t bwd_filter_worker_elems(const ConvShape& s) {
  const int64_t panel = round_up(round_up(taps(s), kTapPad) * kNr, kAlign);
  const int64_t image = image_path(s) ? image_layout(s).elems(s) : 0;
  return bwd_filter_part_elems(s) + panel + round_up(bwd_filter_dyt_rows(s) * kpad(s), kAlign) +
         image;
}
// Note [Filter gradient in column lanes]: on the prepared-image path the filter gradient needs no
// packing and no transposed dY: a tile of 4 filters x 6 taps keeps 24 vector accumulators whose
// 16 lanes sum columns j = 16v + lane, loading dY's rows and the image copy's rows as they lie.
// The accumulators live in a per-thread buffer (filters x taps x 16) across all the thread's
// images and are summed across lanes once at the end.
constexpr int64_t kLaneK = 4, kLaneT = 6;
constexpr int64_t kMaxLanePartials = int64_t{1} << 18;  // floats per thread: 1 MiB
int64_t lane_partial_elems(const ConvShape& s) {
  return s.groups * round_up(s.kg(), kLaneK) * round_up(taps(s), kLaneT) * 16;
}
bool lanes_path(const ConvShape& s) {
  return image_path(s) && s.oh * s.ow % 16 == 0 && lane_partial_elems(s) <= kMaxLanePartials;
}
int64_t lane_images(const ConvShape& s);
int64_t lanes_worker_elems(const ConvShape& s) {
  return round_up(lane_partial_elems(s), kAlign) + lane_images(s) * image_layout(s).elems(s);
}

// acc (MT x 16*NK tile of dWᵀ, rows kp apart) += b (MT taps x kNr, packed) * dyt (kNr x 16*NK,
// rows kp apart).
template <int NK>
inline void kernel_bwd_filter(const float* b, const float* dyt, int64_t kp, float* acc_out) {
  constexpr int MT = kTapPad / NK;
  __m512 acc[MT][NK];
#pragma GCC unroll 24
  for (int i = 0; i < MT; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NK; ++v) acc[i][v] = _mm512_loadu_ps(acc_out + i * kp + 16 * v);
  for (int64_t j = 0; j < kNr; ++j) {
    __m512 dv[NK];
#pragma GCC unroll 4
    for (int v = 0; v < NK; ++v) dv[v] = _mm512_loadu_ps(dyt + j * kp + 16 * v);
#pragma GCC unroll 24
    for (int i = 0; i < MT; ++i) {
      const __m512 bi = _mm512_set1_ps(b[i * kNr + j]);
#pragma GCC unroll 4
      for (int v = 0; v < NK; ++v) acc[i][v] = _mm512_fmadd_ps(bi, dv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 24
  for (int i = 0; i < MT; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NK; ++v) _mm512_storeu_ps(acc_out + i * kp + 16 * v, acc[i][v]);
}

template <int NK>
void bwd_filter_taps(int64_t dpad, const float* bp, const float* dyt, int64_t kp, float* part) {
  constexpr int MT = kTapPad / NK;
  for (int64_t t = 0; t < dpad; t += MT)
    kernel_bwd_filter<NK>(bp + t * kNr, dyt, kp, part + t * kp);
}

// part (dWᵀ, rows kp apart) += the panel bp (dpad taps x kNr) times dyt (kNr x kp).
void bwd_filter_panel(int64_t dpad, const float* bp, const float* dyt, int64_t kp, float* part) {
  for (int64_t k0 = 0; k0 < kp; k0 += 64) {
    switch (std::min<int64_t>(4, (kp - k0) / 16)) {
      case 1:
        bwd_filter_taps<1>(dpad, bp, dyt + k0, kp, part + k0);
        break;
      case 2:
        bwd_filter_taps<2>(dpad, bp, dyt + k0, kp, part + k0);
        break;
      case 3:
        bwd_filter_taps<3>(dpad, bp, dyt + k0, kp, part + k0);
        break;
      default:
        bwd_filter_taps<4>(dpad, bp, dyt + k0, kp, part + k0);
        break;
    }
  }
}

// GCC 12 flags the unused pass-through operand inside the unpack and shuffle intrinsics as
// uninitialised (its bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// out (16 x 16, rows ldo apart) = the transpose of the first `rows` rows of in (rows ldi apart;
// the missing rows read as zero).
inline void transpose16(const float* in, int64_t ldi, int64_t rows, float* out, int64_t ldo) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_loadu_ps(in + i * ldi) : _mm512_setzero_ps();
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  auto pd = [](__m512 v) { return _mm512_castps_pd(v); };
  auto ps = [](__m512d v) { return _mm512_castpd_ps(v); };
  for (int i = 0; i < 16; i += 4) {
    r[i] = ps(_mm512_unpacklo_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 1] = ps(_mm512_unpackhi_pd(pd(t[i]), pd(t[i + 2])));
    r[i + 2] = ps(_mm512_unpacklo_pd(pd(t[i + 1]), pd(t[i + 3])));
    r[i + 3] = ps(_mm512_unpackhi_pd(pd(t[i + 1]), pd(t[i + 3])));
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    _mm512_storeu_ps(out + i * ldo, _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88));
    _mm512_storeu_ps(out + (i + 8) * ldo, _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd));
  }
}

#pragma GCC diagnostic pop

// dyt[j][k] = dy[n][g*kg + k][p0 + j] for j < len, k < kg (and zero for kg <= k < kp when len
// is a multiple of 16).
void transpose_dy(const ConvShape& s, const float* dy, int64_t n, int64_t g, int64_t p0,
                  int64_t len, float* dyt, int64_t kp) {
  const int64_t kg = s.kg(), p = s.oh * s.ow;
  const float* src = dy + (n * s.k + g * kg) * p + p0;
  int64_t j = 0;
  for (; j + 16 <= len; j += 16)
    for (int64_t k = 0; k < kg; k += 16)
      transpose16(src + k * p + j, p, std::min<int64_t>(16, kg - k), dyt + j * kp + k, kp);
  for (int64_t k = 0; k < kg; ++k)
    for (int64_t l = j; l < len; ++l) dyt[l * kp + k] = src[k * p + l];
}

// acc (kLaneK x kLaneT x 16, from the thread's partials) += for each of nimg images j and each
// of its nvec column vectors v: dY rows dyr[i] + j*ystride at 16v times the padded image at
// b + j*xstride + dt[m] + colbase[v] (Note [Filter gradient in column lanes]).
inline void kernel_bwd_filter_lanes(int64_t nimg, int64_t xstride, int64_t ystride, int64_t nvec,
                                    const int64_t* colbase, const float* b, const int64_t* dt,
                                    const float* const* dyr, float* acc_out) {
  __m512 acc[kLaneK][kLaneT];
#pragma GCC unroll 4
  for (int i = 0; i < kLaneK; ++i)
#pragma GCC unroll 6
    for (int m = 0; m < kLaneT; ++m) acc[i][m] = _mm512_loadu_ps(acc_out + (i * kLaneT + m) * 16);
  int64_t o[kLaneT];
#pragma GCC unroll 6
  for (int m = 0; m < kLaneT; ++m) o[m] = dt[m];
  for (int64_t j = 0; j < nimg; ++j) {
    const float* d0 = dyr[0] + j * ystride;
    const float* d1 = dyr[1] + j * ystride;
    const float* d2 = dyr[2] + j * ystride;
    const float* d3 = dyr[3] + j * ystride;
    const float* bj = b + j * xstride;
    for (int64_t v = 0; v < nvec; ++v) {
      const float* bv = bj + colbase[v];
      __m512 xv[kLaneT];
#pragma GCC unroll 6
      for (int m = 0; m < kLaneT; ++m) xv[m] = _mm512_loadu_ps(bv + o[m]);
      // One dY vector live at a time: 24 accumulators + 6 image vectors + 1 fill the registers.
      const float* const rows[kLaneK] = {d0, d1, d2, d3};
#pragma GCC unroll 4
      for (int i = 0; i < kLaneK; ++i) {
        const __m512 dv = _mm512_loadu_ps(rows[i] + 16 * v);
#pragma GCC unroll 6
        for (int m = 0; m < kLaneT; ++m) acc[i][m] = _mm512_fmadd_ps(dv, xv[m], acc[i][m]);
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < kLaneK; ++i)
#pragma GCC unroll 6
    for (int m = 0; m < kLaneT; ++m) _mm512_storeu_ps(acc_out + (i * kLaneT + m) * 16, acc[i][m]);
}

// Images whose padded copies a lanes-path thread keeps at once: enough for ~1024 columns, so
// that the accumulators go back to memory rarely.
int64_t lane_images(const ConvShape& s) {
  return std::max<int64_t>(1, std::min<int64_t>(s.n, 1024 / std::max<int64_t>(1, s.oh * s.ow)));
}

void bwd_filter_lanes(const ConvShape& s, const float* dy, const float* x, float* dw, float* ws,
                      int64_t nw) {
  const int64_t d = taps(s), kg = s.kg(), p = s.oh * s.ow, nvec = p / 16;
  const int64_t kb = round_up(kg, kLaneK) / kLaneK, tb = round_up(d, kLaneT) / kLaneT;
  const int64_t per = lanes_worker_elems(s), nimg = lane_images(s);
  const ImageLayout l = image_layout(s);
  const int64_t xstride = l.elems(s);
  std::vector<int64_t> off(d), colbase(nvec);
  for (int64_t t = 0; t < d; ++t) off[t] = l.tap(s, 0, t / (s.r * s.s), t / s.s % s.r, t % s.s);
  for (int64_t v = 0; v < nvec; ++v) colbase[v] = l.column(s, 16 * v);
  auto worker = [&](int64_t wk) {
    float* part = ws + wk * per;
    float* xp = part + round_up(lane_partial_elems(s), kAlign);
    std::fill(part, part + per, 0.0f);
    const int64_t hi = s.n * (wk + 1) / nw;
    for (int64_t n0 = s.n * wk / nw; n0 < hi; n0 += nimg) {
      const int64_t cnt = std::min(nimg, hi - n0);
      for (int64_t j = 0; j < cnt; ++j) fill_image(s, l, x, n0 + j, xp + j * xstride);
      for (int64_t g = 0; g < s.groups; ++g) {
        const float* xg = xp + l.tap(s, g, 0, 0, 0);
        for (int64_t k = 0; k < kb; ++k) {
          // Filters and taps past the last repeat the last one; their sums are never read.
          const float* dyr[kLaneK];
          for (int64_t i = 0; i < kLaneK; ++i)
            dyr[i] = dy + (n0 * s.k + g * kg + std::min(k * kLaneK + i, kg - 1)) * p;
          for (int64_t t = 0; t < tb; ++t) {
            const float* b = xg + off[t * kLaneT];
            int64_t dt[kLaneT];
            for (int64_t m = 0; m < kLaneT; ++m)
              dt[m] = off[std::min(t * kLaneT + m, d - 1)] - off[t * kLaneT];
            kernel_bwd_filter_lanes(cnt, xstride, s.k * p, nvec, colbase.data(), b, dt, dyr,
                                    part + ((g * kb + k) * tb + t) * kLaneK * kLaneT * 16);
          }
        }
      }
    }
  };
  run_workers(nw, worker);
  // dw[g*kg + k][t] = the lanes of each thread's accumulator summed, then the threads in order.
  for (int64_t g = 0; g < s.groups; ++g)
    for (int64_t k = 0; k < kg; ++k)
      for (int64_t t = 0; t < d; ++t) {
        const int64_t a =
            ((((g * kb + k / kLaneK) * tb + t / kLaneT) * kLaneK + k % kLaneK) * kLaneT +
             t % kLaneT) *
            16;
        float v = 0.0f;
        for (int64_t wk = 0; wk < nw; ++wk)
          v += _mm512_reduce_add_ps(_mm512_loadu_ps(ws + wk * per + a));
        dw[(g * kg + k) * d + t] = v;
      }
}

void bwd_filter_panels(const ConvShape& s, const float* dy, const float* x, float* dw, float* ws,
                       int64_t nw) {
  const int64_t d = taps(s), dpad = round_up(d, kTapPad), kg = s.kg(), kp = kpad(s);
  const int64_t p = s.oh * s.ow, np = panels(s), total = columns(s);
  const int64_t per = bwd_filter_worker_elems(s);
  const ImageLayout l = image_layout(s);
  const bool images = image_path(s);
  const int64_t part_elems = bwd_filter_part_elems(s), dyt_rows = bwd_filter_dyt_rows(s);
  std::vector<int64_t> off(images ? d : 0);
  for (int64_t t = 0; t < static_cast<int64_t>(off.size()); ++t)
    off[t] = l.tap(s, 0, t / (s.r * s.s), t / s.s % s.r, t % s.s);
  auto worker = [&](int64_t wk) {
    float* part = ws + wk * per;
    float* bp = part + part_elems;
    float* dyt = bp + round_up(dpad * kNr, kAlign);
    float* xp = dyt + round_up(dyt_rows * kp, kAlign);
    std::fill(part, part + per, 0.0f);
    if (images) {  // Note [Padded images]: each tap row of a panel is two loads from the copy
      for (int64_t n = s.n * wk / nw; n < s.n * (wk + 1) / nw; ++n) {
        fill_image(s, l, x, n, xp);
        for (int64_t g = 0; g < s.groups; ++g) {
          transpose_dy(s, dy, n, g, 0, p, dyt, kp);
          const float* xg = xp + l.tap(s, g, 0, 0, 0);
          for (int64_t p0 = 0; p0 < p; p0 += kNr) {
            // A half panel (p0 + 16 == p) repeats its first half against dY's zero rows.
            const float* b0 = xg + l.column(s, p0);
            const float* b1 = xg + l.column(s, p - p0 > 16 ? p0 + 16 : p0);
            for (int64_t t = 0; t < d; ++t) {
              _mm512_storeu_ps(bp + t * kNr, _mm512_loadu_ps(b0 + off[t]));
              _mm512_storeu_ps(bp + t * kNr + 16, _mm512_loadu_ps(b1 + off[t]));
            }
            bwd_filter_panel(dpad, bp, dyt + p0 * kp, kp, part + g * dpad * kp);
          }
        }
      }
      return;
    }
    Run runs[kNr];
    for (int64_t pi = np * wk / nw; pi < np * (wk + 1) / nw; ++pi) {
      const int nr = panel_runs(s, pi * kNr, runs);
      const int64_t valid = std::min(kNr, total - pi * kNr);
      if (valid < kNr)  // the last panel: its missing columns must add nothing
        std::fill(dyt + valid * kp, dyt + kNr * kp, 0.0f);
      for (int64_t g = 0; g < s.groups; ++g) {
        pack_panel(s, x, g, runs, nr, bp);
        for (int u = 0; u < nr; ++u) {
          const Run& run = runs[u];
          transpose_dy(s, dy, run.n, g, run.oh * s.ow + run.ow, run.len, dyt + run.dst * kp, kp);
        }
        bwd_filter_panel(dpad, bp, dyt, kp, part + g * dpad * kp);
      }
    }
  };
  run_workers(nw, worker);
  // dw[g*kg + k][t] = the threads' partial dWᵀ[g][t][k], summed in thread order.
  for (int64_t g = 0; g < s.groups; ++g)
    for (int64_t k = 0; k < kg; ++k)
      for (int64_t t = 0; t < d; ++t) {
        float v = 0.0f;
        for (int64_t wk = 0; wk < nw; ++wk) v += ws[wk * per + (g * dpad + t) * kp + k];
        dw[(g * kg + k) * d + t] = v;
      }
}

}  // namespace

int64_t bwd_filter_elems(const ConvShape& s, int64_t nw) {
  return nw * (lanes_path(s) ? lanes_worker_elems(s) : bwd_filter_worker_elems(s));
}

double bwd_filter_work(const ConvShape& t) {
  const double cols = double(t.n) * t.oh * t.ow * t.groups, d = double(taps(t));
  const double gather = image_path(t) ? d / 16.0 : d;  // per column: copy once, or gather per tap
  if (lanes_path(t))
    return cols * (double(round_up(t.kg(), kLaneK)) * round_up(taps(t), kLaneT) / 16.0 + gather);
  // Panels: dWᵀ tiles, plus dY transposed (a quarter unit per value, in 16x16 blocks).
  return cols * (double(round_up(taps(t), kTapPad)) * kpad(t) / 16.0 + gather + kpad(t) / 4.0);
}

void bwd_filter(const ConvShape& s, const float* dy, const float* x, float* dw, float* ws,
                int64_t nw) {
  if (lanes_path(s)) return bwd_filter_lanes(s, dy, x, dw, ws, nw);
  bwd_filter_panels(s, dy, x, dw, ws, nw);
}

}  // namespace ember::kernels::cpu::implicit_gemm
#endif

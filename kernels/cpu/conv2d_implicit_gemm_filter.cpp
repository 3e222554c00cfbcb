// The filter gradient of the implicit-GEMM convolution (kernels/cpu/conv2d_implicit_gemm.h):
// dWᵀ accumulated either in column lanes straight from a per-thread image copy, or in taps x
// filters tiles from packed 32-column panels and dY transposed. Float32; the drivers, compiled for
// the build's target, calling the micro-kernels of the run-time instruction set through its table
// (kernels/cpu/conv2d_implicit_gemm_ukernels.h).
#include <algorithm>
#include <cstring>
#include <vector>

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
// packing and no transposed dY: a tile of lane_k filters x lane_t taps (4 x 6 on AVX-512, 24
// accumulators; 4 x 3 on AVX2, 12) keeps vector accumulators whose lanes sum columns j =
// lanes*v + lane, loading dY's rows and the image copy's rows as they lie. The accumulators live
// in a per-thread buffer (filters x taps x lanes) across all the thread's images and are summed
// across lanes once at the end.
constexpr int64_t kMaxLanePartials = int64_t{1} << 18;  // floats per thread: 1 MiB
int64_t lane_tile(const Ukernels& uk) {
  return uk.lane_k * uk.lane_t * uk.lanes;
}
int64_t lane_partial_elems(const Ukernels& uk, const ConvShape& s) {
  return s.groups * round_up(s.kg(), uk.lane_k) * round_up(taps(s), uk.lane_t) * uk.lanes;
}
bool lanes_path(const Ukernels& uk, const ConvShape& s) {
  return image_path(s) && s.oh * s.ow % 16 == 0 && lane_partial_elems(uk, s) <= kMaxLanePartials;
}
int64_t lane_images(const ConvShape& s);
int64_t lanes_worker_elems(const Ukernels& uk, const ConvShape& s) {
  return round_up(lane_partial_elems(uk, s), kAlign) + lane_images(s) * image_layout(s).elems(s);
}

// Images whose padded copies a lanes-path thread keeps at once: enough for ~1024 columns, so
// that the accumulators go back to memory rarely.
int64_t lane_images(const ConvShape& s) {
  return std::max<int64_t>(1, std::min<int64_t>(s.n, 1024 / std::max<int64_t>(1, s.oh * s.ow)));
}

void bwd_filter_lanes(const Ukernels& uk, const ConvShape& s, const float* dy, const float* x,
                      float* dw, float* ws, int64_t nw) {
  const int64_t lk = uk.lane_k, lt = uk.lane_t, lanes = uk.lanes;
  const int64_t d = taps(s), kg = s.kg(), p = s.oh * s.ow, nvec = p / lanes;
  const int64_t kb = round_up(kg, lk) / lk, tb = round_up(d, lt) / lt;
  const int64_t per = lanes_worker_elems(uk, s), nimg = lane_images(s);
  const ImageLayout l = image_layout(s);
  const int64_t xstride = l.elems(s);
  std::vector<int64_t> off(d), colbase(nvec);
  for (int64_t t = 0; t < d; ++t) off[t] = l.tap(s, 0, t / (s.r * s.s), t / s.s % s.r, t % s.s);
  for (int64_t v = 0; v < nvec; ++v) colbase[v] = l.column(s, lanes * v);
  auto worker = [&](int64_t wk) {
    float* part = ws + wk * per;
    float* xp = part + round_up(lane_partial_elems(uk, s), kAlign);
    std::fill(part, part + per, 0.0f);
    const int64_t hi = s.n * (wk + 1) / nw;
    for (int64_t n0 = s.n * wk / nw; n0 < hi; n0 += nimg) {
      const int64_t cnt = std::min(nimg, hi - n0);
      for (int64_t j = 0; j < cnt; ++j) fill_image(s, l, x, n0 + j, xp + j * xstride);
      for (int64_t g = 0; g < s.groups; ++g) {
        const float* xg = xp + l.tap(s, g, 0, 0, 0);
        for (int64_t k = 0; k < kb; ++k) {
          // Filters and taps past the last repeat the last one; their sums are never read.
          const float* dyr[kMaxLaneK];
          for (int64_t i = 0; i < lk; ++i)
            dyr[i] = dy + (n0 * s.k + g * kg + std::min(k * lk + i, kg - 1)) * p;
          for (int64_t t = 0; t < tb; ++t) {
            const float* b = xg + off[t * lt];
            int64_t dt[kMaxLaneT];
            for (int64_t m = 0; m < lt; ++m) dt[m] = off[std::min(t * lt + m, d - 1)] - off[t * lt];
            uk.bwd_filter_lanes(cnt, xstride, s.k * p, nvec, colbase.data(), b, dt, dyr,
                                part + ((g * kb + k) * tb + t) * lane_tile(uk));
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
            (((g * kb + k / lk) * tb + t / lt) * lk * lt + (k % lk) * lt + t % lt) * lanes;
        float v = 0.0f;
        for (int64_t wk = 0; wk < nw; ++wk) v += uk.sum_lanes(ws + wk * per + a);
        dw[(g * kg + k) * d + t] = v;
      }
}

void bwd_filter_panels(const Ukernels& uk, const ConvShape& s, const float* dy, const float* x,
                       float* dw, float* ws, int64_t nw) {
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
          uk.transpose_dy(s, dy, n, g, 0, p, dyt, kp);
          const float* xg = xp + l.tap(s, g, 0, 0, 0);
          for (int64_t p0 = 0; p0 < p; p0 += kNr) {
            // A half panel (p0 + 16 == p) repeats its first half against dY's zero rows.
            const float* b0 = xg + l.column(s, p0);
            const float* b1 = xg + l.column(s, p - p0 > 16 ? p0 + 16 : p0);
            for (int64_t t = 0; t < d; ++t) {
              std::memcpy(bp + t * kNr, b0 + off[t], 16 * sizeof(float));
              std::memcpy(bp + t * kNr + 16, b1 + off[t], 16 * sizeof(float));
            }
            uk.bwd_filter_panel(dpad, bp, dyt + p0 * kp, kp, part + g * dpad * kp);
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
        uk.pack_panel(s, x, g, runs, nr, bp);
        for (int u = 0; u < nr; ++u) {
          const Run& run = runs[u];
          uk.transpose_dy(s, dy, run.n, g, run.oh * s.ow + run.ow, run.len, dyt + run.dst * kp, kp);
        }
        uk.bwd_filter_panel(dpad, bp, dyt, kp, part + g * dpad * kp);
      }
    }
  };
  run_workers(nw, worker);
  // dw[g*kg + k][t] = the threads' partial dWᵀ[g][t][k], summed in thread order: a transpose,
  // in 16 x 16 blocks so that both sides stay in L1 (a 512 x 4608 filter gradient read down its
  // columns would miss the cache on every value).
  for (int64_t g = 0; g < s.groups; ++g)
    for (int64_t k0 = 0; k0 < kg; k0 += 16)
      for (int64_t t0 = 0; t0 < d; t0 += 16) {
        const int64_t k1 = std::min(kg, k0 + 16), t1 = std::min(d, t0 + 16);
        for (int64_t k = k0; k < k1; ++k)
          for (int64_t t = t0; t < t1; ++t) {
            float v = 0.0f;
            for (int64_t wk = 0; wk < nw; ++wk) v += ws[wk * per + (g * dpad + t) * kp + k];
            dw[(g * kg + k) * d + t] = v;
          }
      }
}

}  // namespace

int64_t bwd_filter_elems(const Ukernels& uk, const ConvShape& s, int64_t nw) {
  return nw * (lanes_path(uk, s) ? lanes_worker_elems(uk, s) : bwd_filter_worker_elems(s));
}

double bwd_filter_work(const Ukernels& uk, const ConvShape& t) {
  const double d = double(taps(t)), nw = double(threads_for(t));
  const double gather = image_path(t) ? d / 16.0 : d;  // per column: copy once, or gather per tap
  const double lanes = double(uk.lanes);
  if (lanes_path(uk, t)) {
    const double cols = double(t.n) * t.oh * t.ow * t.groups;  // lanes of whole rows: no padding
    return cols *
               (double(round_up(t.kg(), uk.lane_k)) * round_up(taps(t), uk.lane_t) / lanes +
                gather) /
               nw +
           double(t.w_numel()) * nw;  // the lanes summed per thread
  }
  // Panels: dWᵀ tiles, plus dY transposed (a quarter unit per value, in 16x16 blocks); each
  // thread's partial dWᵀ zeroed, then all of them added into dW (one unit per value).
  const double cols = computed_columns(t);
  const double part = double(bwd_filter_part_elems(t));
  return (cols * (double(round_up(taps(t), kTapPad)) * kpad(t) / lanes + gather + kpad(t) / 4.0) +
          part / lanes) /
             nw +
         part * nw;
}

void bwd_filter(const Ukernels& uk, const ConvShape& s, const float* dy, const float* x, float* dw,
                float* ws, int64_t nw) {
  if (lanes_path(uk, s)) return bwd_filter_lanes(uk, s, dy, x, dw, ws, nw);
  bwd_filter_panels(uk, s, dy, x, dw, ws, nw);
}

}  // namespace ember::kernels::cpu::implicit_gemm

// The implicit-GEMM convolution's AVX2 micro-kernels (kernels/cpu/conv2d_implicit_gemm_ukernels.h):
// 8-float vectors, sixteen registers. Compiled with -mavx2 -mfma whatever the build's target, and
// run only where the CPU has both; Note [Instruction-set files] says what this file may include
// and define.
//
// The tiles are the AVX-512 ones cut to fit half the registers of half the width:
//   forward          6 filters x 16 columns (12 accumulators, two panel vectors and one
//                    broadcast), once per half of a 32-column panel
//   backward filter  6 taps x 16 filters of dWᵀ (12 accumulators, two dY vectors, one
//                    broadcast from the panel), or in column lanes 4 filters x 3 taps (12
//                    accumulators, three image vectors, one dY vector)
#include <immintrin.h>

#include "kernels/cpu/conv2d_implicit_gemm_ukernels.h"

namespace ember::kernels::cpu::implicit_gemm {
namespace {

constexpr int kMr = 6;                 // filters per forward tile
constexpr int kFilterMt = 6;           // taps per backward-filter tile (divides kTapPad)
constexpr int kLaneK = 4, kLaneT = 3;  // the column-lanes tile

// No std::min, std::max (Note [Instruction-set files]).
inline int64_t imin(int64_t a, int64_t b) {
  return a < b ? a : b;
}
inline int64_t imax(int64_t a, int64_t b) {
  return a > b ? a : b;
}
inline int64_t ceil_div(int64_t a, int64_t b) {  // ceil(a / b) for b > 0 and any a
  return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

// The lanes [lo, hi) of an 8-lane vector as a mask (all ones in a lane that is in), and as bits.
inline __m256i lane_mask(int64_t lo, int64_t hi) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i l = _mm256_set1_epi32(static_cast<int>(imin(imax(lo, -1), 8)));
  const __m256i h = _mm256_set1_epi32(static_cast<int>(imin(imax(hi, -1), 8)));
  return _mm256_andnot_si256(_mm256_cmpgt_epi32(l, idx), _mm256_cmpgt_epi32(h, idx));
}
inline int mask_bits(__m256i m) {
  return _mm256_movemask_ps(_mm256_castsi256_ps(m));
}

// --- forward -----------------------------------------------------------------------------------

// v, or v clamped to [bounds[0], bounds[1]] where bounds is not null: max and min return their
// second operand when one is NaN, so a NaN passes through (clamp_value's rule).
inline __m256 bounded(__m256 v, const float* bounds) {
  if (bounds == nullptr) return v;
  return _mm256_min_ps(_mm256_set1_ps(bounds[1]), _mm256_max_ps(_mm256_set1_ps(bounds[0]), v));
}

// The value a forward tile stores at c + i: v plus the residual z[i] (z null: none), then
// bounded (the order of Epilogue::row in conv2d_implicit_gemm.cpp, so both give the same bits).
inline __m256 finished(__m256 v, const float* z, int64_t i, const float* bounds) {
  if (z != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(z + i));
  return bounded(v, bounds);
}

// c (kMr x 16, rows ldc apart) = bias + a (d x kMr, packed) * the 16 columns at row(t) for tap t:
// per tap two vector loads, six broadcasts and twelve multiply-adds.
template <typename Row>
inline void tile_fwd(int64_t d, const float* a, Row row, const float* bias, const float* bounds,
                     const float* z, float* c, int64_t ldc) {
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm256_set1_ps(bias[i]);
  for (int64_t t = 0; t < d; ++t) {
    const float* b = row(t);
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMr;
  }
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    _mm256_storeu_ps(c + i * ldc, finished(acc[i][0], z, i * ldc, bounds));
    _mm256_storeu_ps(c + i * ldc + 8, finished(acc[i][1], z, i * ldc + 8, bounds));
  }
}

// Note [Blocks of fewer filters]
// A block of fewer than kMr filters (the last of a layer whose filter count is not a multiple of
// six: 16 = 6 + 6 + 4, 32 = 5 * 6 + 2) is computed two rows at a time over the whole panel:
// eight accumulators, four panel vectors and two broadcasts per tap, which keeps both FMA pipes
// as busy per row as the 6 x 16 tile does. Computing it as a whole 6-row tile, as before, spent
// a sixth of the multiply-adds of a 16- or 32-filter layer on rows of zeros.

// c (2 x 32, rows ldc apart) = bias + rows 0 and 1 of a (d x kMr, packed) * the 32 columns of tap
// t, 16 at lo(t) and 16 at hi(t).
template <typename Lo, typename Hi>
inline void tile_fwd_pair(int64_t d, const float* a, Lo lo, Hi hi, const float* bias,
                          const float* bounds, const float* z, float* c, int64_t ldc) {
  __m256 acc[2][4];
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[i][v] = _mm256_set1_ps(bias[i]);
  for (int64_t t = 0; t < d; ++t) {
    const float *l = lo(t), *h = hi(t);
    const __m256 b[4] = {_mm256_loadu_ps(l), _mm256_loadu_ps(l + 8), _mm256_loadu_ps(h),
                         _mm256_loadu_ps(h + 8)};
#pragma GCC unroll 2
    for (int i = 0; i < 2; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[i][v] = _mm256_fmadd_ps(ai, b[v], acc[i][v]);
    }
    a += kMr;
  }
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v)
      _mm256_storeu_ps(c + i * ldc + 8 * v, finished(acc[i][v], z, i * ldc + 8 * v, bounds));
}

// z + i, or null where z is.
inline const float* offset(const float* z, int64_t i) {
  return z != nullptr ? z + i : nullptr;
}

void kernel_fwd(int64_t d, int64_t rows, const float* a, const float* b, const float* bias,
                const float* bounds, const float* z, float* c, int64_t ldc) {
  if (rows < kMr) {  // Note [Blocks of fewer filters]
    for (int64_t i = 0; i < rows; i += 2)
      tile_fwd_pair(
          d, a + i, [=](int64_t t) { return b + t * kNr; },
          [=](int64_t t) { return b + t * kNr + 16; }, bias + i, bounds, offset(z, i * ldc),
          c + i * ldc, ldc);
    return;
  }
  for (int h = 0; h < 2; ++h) {
    const float* bh = b + 16 * h;
    tile_fwd(
        d, a, [=](int64_t t) { return bh + t * kNr; }, bias, bounds, offset(z, 16 * h), c + 16 * h,
        ldc);
  }
}

void kernel_fwd_padded(int64_t d, int64_t rows, const float* a, const int64_t* off, const float* b0,
                       const float* b1, const float* bias, const float* bounds, const float* z,
                       float* c, int64_t ldc) {
  if (rows < kMr) {  // Note [Blocks of fewer filters]
    for (int64_t i = 0; i < rows; i += 2)
      tile_fwd_pair(
          d, a + i, [=](int64_t t) { return b0 + off[t]; }, [=](int64_t t) { return b1 + off[t]; },
          bias + i, bounds, offset(z, i * ldc), c + i * ldc, ldc);
    return;
  }
  tile_fwd(
      d, a, [=](int64_t t) { return b0 + off[t]; }, bias, bounds, z, c, ldc);
  tile_fwd(
      d, a, [=](int64_t t) { return b1 + off[t]; }, bias, bounds, offset(z, 16), c + 16, ldc);
}

// --- panel packing -----------------------------------------------------------------------------

// As the AVX-512 pack_panel (Note [Panel packing]), a panel row built in four 8-lane registers: a
// partial run loads a whole vector where it stays inside the image buffer and blends the lanes
// it needs, else loads only the lanes inside the row (vmaskmov, which never faults on the
// others). Stride 2 keeps the even floats of 16: a shuffle within each 128-bit half, then a
// permute of the four 64-bit pairs into order.
void pack_panel(const ConvShape& s, const float* x, int64_t g, const Run* runs, int nruns,
                float* bp) {
  const int64_t cg = s.c / s.groups, hw = s.h * s.w, sw = s.stride_w;
  const float* const x_end = x + s.n * s.c * s.h * s.w;
  const float* img[kNr];
  int64_t ih0[kNr], off[kNr][4];
  __m256i use[kNr][4], in[kNr][4][2];
  int use_bits[kNr][4];
  for (int i = 0; i < nruns; ++i) {
    img[i] = x + (runs[i].n * s.c + g * cg) * hw;
    ih0[i] = runs[i].oh * s.stride_h - s.pad_h;
  }
  auto whole = [&](const float* p, int64_t n) { return p >= x && p + n <= x_end; };
  for (int64_t q = 0; q < s.s; ++q) {
    // Lane j of quarter v (panel column 8v + j) of run i reads source column off + j (unit
    // stride) or off + 2j (stride 2); `use` holds the lanes of the run whose source column lies
    // inside the row, `in` the source floats that do.
    for (int i = 0; i < nruns; ++i) {
      const int64_t d = runs[i].dst, len = runs[i].len;
      const int64_t iw = runs[i].ow * sw - s.pad_w + q * s.dil_w;
      for (int v = 0; v < 4; ++v) {
        const int64_t step = imin(sw, 2), o = iw + (8 * v - d) * step;
        off[i][v] = o;
        use[i][v] = _mm256_and_si256(lane_mask(d - 8 * v, d + len - 8 * v),
                                     lane_mask(ceil_div(-o, step), ceil_div(s.w - o, step)));
        use_bits[i][v] = mask_bits(use[i][v]);
        in[i][v][0] = lane_mask(-o, s.w - o);
        in[i][v][1] = lane_mask(-o - 8, s.w - o - 8);
      }
    }
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < s.r; ++r) {
        float* row = bp + ((c * s.r + r) * s.s + q) * kNr;
        if (sw > 2) {
          for (int64_t j = 0; j < kNr; ++j) row[j] = 0.0f;
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
        __m256 part[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                          _mm256_setzero_ps()};
        for (int i = 0; i < nruns; ++i) {
          const int64_t ih = ih0[i] + r * s.dil_h;
          if (static_cast<uint64_t>(ih) >= static_cast<uint64_t>(s.h)) continue;
          const float* src = img[i] + c * hw + ih * s.w;
          for (int v = 0; v < 4; ++v) {
            if (!use_bits[i][v]) continue;
            const float* p = src + off[i][v];
            __m256 val;
            if (sw == 1) {
              if (use_bits[i][v] == 0xFF) {
                part[v] = _mm256_loadu_ps(p);
                continue;
              }
              val = whole(p, 8) ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, in[i][v][0]);
            } else {
              const bool w = whole(p, 16);
              const __m256 lo = w ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, in[i][v][0]);
              const __m256 hi = w ? _mm256_loadu_ps(p + 8) : _mm256_maskload_ps(p + 8, in[i][v][1]);
              // [lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6] -> [lo0 lo2 lo4 lo6 hi0 hi2 hi4 hi6]
              const __m256 ev = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
              val = _mm256_castpd_ps(
                  _mm256_permute4x64_pd(_mm256_castps_pd(ev), _MM_SHUFFLE(3, 1, 2, 0)));
            }
            part[v] = _mm256_blendv_ps(part[v], val, _mm256_castsi256_ps(use[i][v]));
          }
        }
        for (int v = 0; v < 4; ++v) _mm256_storeu_ps(row + 8 * v, part[v]);
      }
  }
}

// --- backward filter ---------------------------------------------------------------------------

// acc (kFilterMt taps x 16 filters of dWᵀ, rows kp apart) += b (kFilterMt taps x kNr, packed) *
// dyt (kNr x 16, rows kp apart): per column two dY loads, six broadcasts, twelve multiply-adds.
inline void tile_bwd_filter(const float* b, const float* dyt, int64_t kp, float* acc_out) {
  __m256 acc[kFilterMt][2];
#pragma GCC unroll 6
  for (int i = 0; i < kFilterMt; ++i) {
    acc[i][0] = _mm256_loadu_ps(acc_out + i * kp);
    acc[i][1] = _mm256_loadu_ps(acc_out + i * kp + 8);
  }
  for (int64_t j = 0; j < kNr; ++j) {
    const __m256 d0 = _mm256_loadu_ps(dyt + j * kp), d1 = _mm256_loadu_ps(dyt + j * kp + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kFilterMt; ++i) {
      const __m256 bi = _mm256_broadcast_ss(b + i * kNr + j);
      acc[i][0] = _mm256_fmadd_ps(bi, d0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(bi, d1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < kFilterMt; ++i) {
    _mm256_storeu_ps(acc_out + i * kp, acc[i][0]);
    _mm256_storeu_ps(acc_out + i * kp + 8, acc[i][1]);
  }
}

void bwd_filter_panel(int64_t dpad, const float* bp, const float* dyt, int64_t kp, float* part) {
  for (int64_t k0 = 0; k0 < kp; k0 += 16)
    for (int64_t t = 0; t < dpad; t += kFilterMt)
      tile_bwd_filter(bp + t * kNr, dyt + k0, kp, part + t * kp + k0);
}

// out (8 x 8, rows ldo apart) = the transpose of the first `rows` rows of in (rows ldi apart; the
// missing rows read as zero): pairs, then quads within each 128-bit half, then the halves.
inline void transpose8(const float* in, int64_t ldi, int64_t rows, float* out, int64_t ldo) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = i < rows ? _mm256_loadu_ps(in + i * ldi) : _mm256_setzero_ps();
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(out + i * ldo, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(out + (i + 4) * ldo, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

void transpose_dy(const ConvShape& s, const float* dy, int64_t n, int64_t g, int64_t p0,
                  int64_t len, float* dyt, int64_t kp) {
  const int64_t kg = s.k / s.groups, p = s.oh * s.ow;
  const float* src = dy + (n * s.k + g * kg) * p + p0;
  int64_t j = 0;
  for (; j + 8 <= len; j += 8)
    for (int64_t k = 0; k < kp; k += 8)
      transpose8(src + k * p + j, p, imax(0, imin(8, kg - k)), dyt + j * kp + k, kp);
  for (int64_t k = 0; k < kg; ++k)
    for (int64_t l = j; l < len; ++l) dyt[l * kp + k] = src[k * p + l];
}

// As the AVX-512 kernel_bwd_filter_lanes (Note [Filter gradient in column lanes]) with 8-lane
// accumulators, 4 filters x 3 taps: 12 accumulators, 3 image vectors and one dY vector.
void kernel_bwd_filter_lanes(int64_t nimg, int64_t xstride, int64_t ystride, int64_t nvec,
                             const int64_t* colbase, const float* b, const int64_t* dt,
                             const float* const* dyr, float* acc_out) {
  __m256 acc[kLaneK][kLaneT];
#pragma GCC unroll 4
  for (int i = 0; i < kLaneK; ++i)
#pragma GCC unroll 3
    for (int m = 0; m < kLaneT; ++m) acc[i][m] = _mm256_loadu_ps(acc_out + (i * kLaneT + m) * 8);
  const int64_t o0 = dt[0], o1 = dt[1], o2 = dt[2];
  for (int64_t j = 0; j < nimg; ++j) {
    const float* const rows[kLaneK] = {dyr[0] + j * ystride, dyr[1] + j * ystride,
                                       dyr[2] + j * ystride, dyr[3] + j * ystride};
    const float* bj = b + j * xstride;
    for (int64_t v = 0; v < nvec; ++v) {
      const float* bv = bj + colbase[v];
      const __m256 xv[kLaneT] = {_mm256_loadu_ps(bv + o0), _mm256_loadu_ps(bv + o1),
                                 _mm256_loadu_ps(bv + o2)};
#pragma GCC unroll 4
      for (int i = 0; i < kLaneK; ++i) {
        const __m256 dv = _mm256_loadu_ps(rows[i] + 8 * v);
#pragma GCC unroll 3
        for (int m = 0; m < kLaneT; ++m) acc[i][m] = _mm256_fmadd_ps(dv, xv[m], acc[i][m]);
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < kLaneK; ++i)
#pragma GCC unroll 3
    for (int m = 0; m < kLaneT; ++m) _mm256_storeu_ps(acc_out + (i * kLaneT + m) * 8, acc[i][m]);
}

// The eight lanes summed in a fixed tree: halves, then pairs, then the last two.
float sum_lanes(const float* v) {
  const __m256 x = _mm256_loadu_ps(v);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

}  // namespace

extern const Ukernels kAvx2Ukernels = {"avx2",
                                       kMr,
                                       2,
                                       8,
                                       kLaneK,
                                       kLaneT,
                                       kernel_fwd,
                                       kernel_fwd_padded,
                                       pack_panel,
                                       bwd_filter_panel,
                                       transpose_dy,
                                       kernel_bwd_filter_lanes,
                                       sum_lanes,
                                       nullptr,
                                       0,
                                       0};

}  // namespace ember::kernels::cpu::implicit_gemm

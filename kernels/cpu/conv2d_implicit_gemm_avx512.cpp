// The implicit-GEMM convolution's AVX-512 micro-kernels
// (kernels/cpu/conv2d_implicit_gemm_ukernels.h): 16-float vectors. Compiled with -mavx512f whatever
// the build's target, and run only where the CPU has it; Note [Instruction-set files] says what
// this file may include and define.
//
// Forward: a kMr x kNr tile of Y (8 filters x 32 columns, 16 accumulators) is the packed filter
// block (d x 8, one broadcast per tap and filter) times the panel (two vector loads per tap).
// Backward filter: a 24/NK x 16*NK tile of dWᵀ (taps x filters) accumulates the panel's 32
// columns: one broadcast from the panel per tap and column, times dY's 32 x K block transposed;
// or, from an image copy, 4 filters x 6 taps in column lanes (Note [Filter gradient in column
// lanes]).
#include <immintrin.h>

#include "kernels/cpu/conv2d_implicit_gemm_ukernels.h"

namespace ember::kernels::cpu::implicit_gemm {
namespace {

constexpr int64_t kMr = 8;
constexpr int64_t kLaneK = 4, kLaneT = 6;

// No std::min, std::max (Note [Instruction-set files]).
inline int64_t imin(int64_t a, int64_t b) {
  return a < b ? a : b;
}
inline int64_t imax(int64_t a, int64_t b) {
  return a > b ? a : b;
}
// ceil(a / b) for b > 0 and any a.
inline int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

// Lanes [lo, hi) of a 16-lane mask, clamped to [0, 16).
inline __mmask16 lanes(int64_t lo, int64_t hi) {
  lo = imax(lo, 0);
  hi = imin(hi, 16);
  if (hi <= lo) return 0;
  return static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
}

// bp (taps x kNr) = the panel's columns of col(X) for group g (Note [Panel packing]). Columns
// past the last run are zero. Each panel row is built in two registers and written with two full
// stores. Masked loads and stores are slow on some AVX-512 machines (this one among them), so a
// partial run loads a whole vector and blends the lanes it needs, falling back to a masked load
// only where a whole vector would reach outside the image buffer. Taps run q-major so that each
// run's masks and offsets are worked out once per q, not once per tap.
void pack_panel(const ConvShape& s, const float* x, int64_t g, const Run* runs, int nruns,
                float* bp) {
  const int64_t cg = s.c / s.groups, hw = s.h * s.w, sw = s.stride_w;
  const float* const x_end = x + s.n * s.c * s.h * s.w;
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
        const int64_t step = imin(sw, 2), o = iw + (16 * v - d) * step;
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

// v, or v clamped to [bounds[0], bounds[1]] where bounds is not null: max and min return their
// second operand when one is NaN, so a NaN passes through (clamp_value's rule).
inline __m512 bounded(__m512 v, const float* bounds) {
  if (bounds == nullptr) return v;
  return _mm512_min_ps(_mm512_set1_ps(bounds[1]), _mm512_max_ps(_mm512_set1_ps(bounds[0]), v));
}

// The value a forward tile stores at c + i: v plus the residual z[i] (z null: none), then
// bounded (the order of Epilogue::row in conv2d_implicit_gemm.cpp, so both give the same bits).
inline __m512 finished(__m512 v, const float* z, int64_t i, const float* bounds) {
  if (z != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(z + i));
  return bounded(v, bounds);
}

// c (kMr x kNr, rows ldc apart) = bias + a (d x kMr, packed) * b (d x kNr, packed) (+ z): all
// kMr rows, whatever the block's `rows` (a block of fewer filters is packed with zeros past them).
void kernel_fwd(int64_t d, int64_t /*rows*/, const float* a, const float* b, const float* bias,
                const float* bounds, const float* z, float* c, int64_t ldc) {
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
    _mm512_storeu_ps(c + i * ldc, finished(acc[i][0], z, i * ldc, bounds));
    _mm512_storeu_ps(c + i * ldc + 16, finished(acc[i][1], z, i * ldc + 16, bounds));
  }
}

// As kernel_fwd, with the panel's two halves read straight from padded images at b0 and b1 plus
// the tap's offset (Note [Padded images]).
void kernel_fwd_padded(int64_t d, int64_t /*rows*/, const float* a, const int64_t* off,
                       const float* b0p, const float* b1p, const float* bias, const float* bounds,
                       const float* z, float* c, int64_t ldc) {
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
    _mm512_storeu_ps(c + i * ldc, finished(acc[i][0], z, i * ldc, bounds));
    _mm512_storeu_ps(c + i * ldc + 16, finished(acc[i][1], z, i * ldc + 16, bounds));
  }
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
    switch (imin(4, (kp - k0) / 16)) {
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
  const int64_t kg = s.k / s.groups, p = s.oh * s.ow;
  const float* src = dy + (n * s.k + g * kg) * p + p0;
  int64_t j = 0;
  for (; j + 16 <= len; j += 16)
    for (int64_t k = 0; k < kg; k += 16)
      transpose16(src + k * p + j, p, imin(16, kg - k), dyt + j * kp + k, kp);
  for (int64_t k = 0; k < kg; ++k)
    for (int64_t l = j; l < len; ++l) dyt[l * kp + k] = src[k * p + l];
}

// acc (kLaneK x kLaneT x 16, from the thread's partials) += for each of nimg images j and each
// of its nvec column vectors v: dY rows dyr[i] + j*ystride at 16v times the padded image at
// b + j*xstride + dt[m] + colbase[v] (Note [Filter gradient in column lanes]).
void kernel_bwd_filter_lanes(int64_t nimg, int64_t xstride, int64_t ystride, int64_t nvec,
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

// GCC 12's bug 105593 again, inside the reduction's extract.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
float sum_lanes(const float* v) {
  return _mm512_reduce_add_ps(_mm512_loadu_ps(v));
}
#pragma GCC diagnostic pop

// GCC 12's bug 105593 again, inside the unpacks and shuffles.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// c[f * ldc + j] = bounded(v[j][f]) for 16 filters f and 8 columns j: the 8 x 16 transpose of
// two 8 x 8 ones side by side (unpacks and shuffles within 128-bit lanes, then the lanes
// gathered), each filter's 8 columns one 256-bit store. Through a tile and scalar stores it
// cost about a tenth of a 16 -> 32 stride-2 layer's time.
inline void store_columns8(const __m512* v, const float* bounds, float* c, int64_t ldc) {
  __m512 t[8], u[8];
  for (int j = 0; j < 8; j += 2) {
    const __m512 a = bounded(v[j], bounds), b = bounded(v[j + 1], bounds);
    t[j] = _mm512_unpacklo_ps(a, b);
    t[j + 1] = _mm512_unpackhi_ps(a, b);
  }
  for (int j = 0; j < 8; j += 4) {  // lane L of u[j + m] holds rows j..j+3 of filter 4L + m
    u[j] = _mm512_shuffle_ps(t[j], t[j + 2], 0x44);
    u[j + 1] = _mm512_shuffle_ps(t[j], t[j + 2], 0xee);
    u[j + 2] = _mm512_shuffle_ps(t[j + 1], t[j + 3], 0x44);
    u[j + 3] = _mm512_shuffle_ps(t[j + 1], t[j + 3], 0xee);
  }
  // w holds lanes h and h + 2 of the rows 0-3 part a and of the rows 4-7 part b: [a.h, a.h+2,
  // b.h, b.h+2]; put in filter order, [a.h, b.h, a.h+2, b.h+2] are filters f and f + 8. (The
  // shuffles' selectors are immediates, literal even where the compiler does not unroll.)
  auto store = [&](__m512 w, int f) {
    const __m512 r = _mm512_shuffle_f32x4(w, w, 0xd8);
    _mm256_storeu_ps(c + f * ldc, _mm512_castps512_ps256(r));
    _mm256_storeu_ps(c + (f + 8) * ldc,
                     _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(r), 1)));
  };
  for (int m = 0; m < 4; ++m) {
    store(_mm512_shuffle_f32x4(u[m], u[m + 4], 0x88), m);      // lanes 0 and 2
    store(_mm512_shuffle_f32x4(u[m], u[m + 4], 0xdd), m + 4);  // lanes 1 and 3
  }
}
#pragma GCC diagnostic pop

// Filters in lanes: 32 filters (two vectors) x NP output columns NP * ST floats apart, each
// tap's filter values loaded once and multiplied by every column's broadcast input value; the
// accumulators (one column each) are transposed through a tile into c's filter rows.
template <int NP, int ST>
void lanes_tile(int64_t d, const float* a, const int64_t* off, const float* x0, const float* bias,
                const float* bounds, float* c, int64_t ldc) {
  __m512 acc[2][NP];
  const __m512 bias0 = _mm512_loadu_ps(bias), bias1 = _mm512_loadu_ps(bias + 16);
#pragma GCC unroll 8
  for (int j = 0; j < NP; ++j) acc[0][j] = bias0, acc[1][j] = bias1;
  for (int64_t t = 0; t < d; ++t) {
    const float* xt = x0 + off[t];
    const __m512 w0 = _mm512_loadu_ps(a), w1 = _mm512_loadu_ps(a + 16);
#pragma GCC unroll 8
    for (int j = 0; j < NP; ++j) {
      const __m512 xj = _mm512_set1_ps(xt[j * ST]);
      acc[0][j] = _mm512_fmadd_ps(w0, xj, acc[0][j]);
      acc[1][j] = _mm512_fmadd_ps(w1, xj, acc[1][j]);
    }
    a += 32;
  }
  if constexpr (NP == 8) {
    store_columns8(acc[0], bounds, c, ldc);
    store_columns8(acc[1], bounds, c + 16 * ldc, ldc);
  } else {
    alignas(64) float tile[NP][32];
#pragma GCC unroll 8
    for (int j = 0; j < NP; ++j) {
      _mm512_store_ps(tile[j], bounded(acc[0][j], bounds));
      _mm512_store_ps(tile[j] + 16, bounded(acc[1][j], bounds));
    }
    for (int f = 0; f < 32; ++f)
#pragma GCC unroll 8
      for (int j = 0; j < NP; ++j) c[f * ldc + j] = tile[j][f];
  }
}

using LanesTile = void (*)(int64_t, const float*, const int64_t*, const float*, const float*,
                           const float*, float*, int64_t);
template <int ST>
constexpr LanesTile kLanesTiles[kLanePixels] = {lanes_tile<1, ST>, lanes_tile<2, ST>,
                                                lanes_tile<3, ST>, lanes_tile<4, ST>,
                                                lanes_tile<5, ST>, lanes_tile<6, ST>,
                                                lanes_tile<7, ST>, lanes_tile<8, ST>};

void kernel_fwd_lanes(int64_t d, const float* a, const int64_t* off, const float* x0,
                      int64_t stride, int64_t np, const float* bias, const float* bounds, float* c,
                      int64_t ldc) {
  (stride == 1 ? kLanesTiles<1> : kLanesTiles<2>)[np - 1](d, a, off, x0, bias, bounds, c, ldc);
}

}  // namespace

extern const Ukernels kAvx512Ukernels = {"avx512",
                                         kMr,
                                         kMr,
                                         16,
                                         kLaneK,
                                         kLaneT,
                                         kernel_fwd,
                                         kernel_fwd_padded,
                                         pack_panel,
                                         bwd_filter_panel,
                                         transpose_dy,
                                         kernel_bwd_filter_lanes,
                                         sum_lanes,
                                         kernel_fwd_lanes,
                                         32,
                                         kLanePixels};

}  // namespace ember::kernels::cpu::implicit_gemm

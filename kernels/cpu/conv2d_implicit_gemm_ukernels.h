// The micro-kernels of the cpu's implicit-GEMM convolution, one table per instruction set:
// kernels/cpu/conv2d_implicit_gemm_avx512.cpp and conv2d_implicit_gemm_avx2.cpp, each compiled
// with its own instruction-set flags whatever the build's -march, so one binary carries both and
// the drivers (conv2d_implicit_gemm.cpp, conv2d_implicit_gemm_filter.cpp, compiled for the
// build's target) pick a table at run time (kernels/cpu/cpu_isa.h).
//
// Note [Instruction-set files]: code compiled with -mavx2 or -mavx512f must never run before the
// CPU check. A function those files define that other files could also define (an inline
// function or template from a shared header: ConvShape's methods, std::min, std::vector) would
// be emitted there with the wider instructions, and the linker keeps one copy for the whole
// library. So those files include only <immintrin.h> and this header (plain structs and
// declarations), read ConvShape's fields but call none of its methods, keep everything but their
// table in an unnamed namespace, and a test (tests/isa_symbols.cmake) checks that their objects
// define no other symbol.
#pragma once

#include <cstdint>

#include "kernels/conv_shape.h"

namespace ember::kernels::cpu::implicit_gemm {

constexpr int64_t kNr = 32;      // columns per panel
constexpr int64_t kTapPad = 24;  // backward-filter tiles are a divisor of 24 taps high
constexpr int64_t kMaxMr = 8;    // the most filters any forward tile has
constexpr int64_t kMaxLaneK = 4, kMaxLaneT = 6;  // the largest column-lanes tile
constexpr int64_t kLanePixels = 8;  // the most output columns of an AVX-512 filters-in-lanes tile

// Columns [dst, dst + len) of a panel: image n, output row oh, output columns [ow, ow + len).
struct Run {
  int64_t n, oh, ow, len, dst;
};

// One instruction set's micro-kernels. Panels are kNr columns wide, rows kNr floats apart; `a`
// is a packed filter block (d taps x mr filters); dY transposed (`dyt`) has rows kp apart, kp a
// multiple of 16.
struct Ukernels {
  const char* isa;         // "avx512", "avx2"
  int64_t mr;              // filters per forward tile
  int64_t tail_step;       // a block of fewer than mr filters is computed in steps of this many
  int64_t lanes;           // floats per vector
  int64_t lane_k, lane_t;  // filters x taps of the column-lanes filter-gradient tile

  // c (rows x kNr, rows ldc apart) = bias (mr values) + a * b (d x kNr, packed), for a block
  // of rows <= mr filters, plus the residual z (read at c's offsets) when z is not null, then
  // clamped to [bounds[0], bounds[1]] in the registers (a NaN kept) when `bounds` is not null.
  // The kernels write round_up(rows, tail_step) rows of c, those past `rows` scratch (the AVX2
  // kernels compute a block of fewer than mr two rows at a time, the AVX-512 ones whole): so a
  // block whose rows are a multiple of tail_step is stored in place (and only such a block reads
  // a residual: the scratch rows would read past it).
  void (*fwd)(int64_t d, int64_t rows, const float* a, const float* b, const float* bias,
              const float* bounds, const float* z, float* c, int64_t ldc);
  // As fwd, the panel's two 16-column halves read at b0 + off[t] and b1 + off[t] for tap t (a
  // prepared image copy, Note [Padded images]).
  void (*fwd_padded)(int64_t d, int64_t rows, const float* a, const int64_t* off, const float* b0,
                     const float* b1, const float* bias, const float* bounds, const float* z,
                     float* c, int64_t ldc);
  // bp (taps x kNr) = the panel's columns of col(X) for group g; columns past the last run zero
  // (Note [Panel packing]).
  void (*pack_panel)(const ConvShape& s, const float* x, int64_t g, const Run* runs, int nruns,
                     float* bp);
  // part (dpad taps x kp filters of dWᵀ, rows kp apart) += bp (dpad x kNr) * dyt (kNr x kp);
  // dpad a multiple of kTapPad.
  void (*bwd_filter_panel)(int64_t dpad, const float* bp, const float* dyt, int64_t kp,
                           float* part);
  // dyt[j][k] = dy[n][g*kg + k][p0 + j] for j < len, k < kg (zero for kg <= k < kp on the rows
  // written in blocks).
  void (*transpose_dy)(const ConvShape& s, const float* dy, int64_t n, int64_t g, int64_t p0,
                       int64_t len, float* dyt, int64_t kp);
  // acc (lane_k x lane_t accumulators of `lanes` floats) += for each of nimg images j and each of
  // its nvec column vectors v: dY rows dyr[i] + j*ystride at lanes*v times the image copy at
  // b + j*xstride + dt[m] + colbase[v] (Note [Filter gradient in column lanes]).
  void (*bwd_filter_lanes)(int64_t nimg, int64_t xstride, int64_t ystride, int64_t nvec,
                           const int64_t* colbase, const float* b, const int64_t* dt,
                           const float* const* dyr, float* acc);
  // The sum of one accumulator's `lanes` floats at v.
  float (*sum_lanes)(const float* v);
  // Filters in lanes (Note [Filters in lanes] in conv2d_implicit_gemm_lanes.cpp): c[f * ldc + j] =
  // bias[f] + sum over taps t of a[t * lane_filters + f] * x0[off[t] + j * stride], for the
  // lane_filters filters f of a block and 1 <= np <= lane_pixels output columns j (stride 1 or
  // 2), clamped to `bounds` as fwd. Null (lane_filters and lane_pixels 0) where the instruction
  // set has none.
  void (*fwd_lanes)(int64_t d, const float* a, const int64_t* off, const float* x0,
                    int64_t stride, int64_t np, const float* bias, const float* bounds, float* c,
                    int64_t ldc);
  int64_t lane_filters, lane_pixels;
};

// The tables: data, so that naming one runs no code. Call through one only where the CPU has its
// instructions, AVX-512F (avx512) or AVX2 and FMA (avx2): kernels/cpu/cpu_isa.h.
extern const Ukernels kAvx512Ukernels;
extern const Ukernels kAvx2Ukernels;

}  // namespace ember::kernels::cpu::implicit_gemm

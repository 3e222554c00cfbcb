// Implicit-GEMM convolution: every direction is a GEMM per group (blockIdx.z) whose operands are
// gathered from the NCHW tensors while the tiles are loaded, so no im2col buffer exists.
//
//   forward          rows m = (n, p, q) over N*OH*OW, cols j = filter in the group (K/G),
//                    reduction over (c, r, s): A[m][c,r,s] = x[n, c, p*sh - ph + r*dh, ...],
//                    B[c,r,s][j] = w[j, c, r, s]; C[m][j] -> y[n, j, p, q] (+ bias[j]).
//   backward-data    rows m = (n, h, w) over N*H*W, cols j = channel in the group (C/G),
//                    reduction over (k, r, s): A[m][k,r,s] = dy[n, k, (h + ph - r*dh) / sh, ...]
//                    for the taps that land on the stride grid (the others are zeros: the
//                    zero-insertion of a strided transposed convolution, skipped without a load),
//                    B[k,r,s][j] = w[k, j, r, s]; C[m][j] -> dx[n, j, h, w].
//   backward-filter  rows m = (c, r, s) over C/G*R*S, cols j = filter in the group (K/G),
//                    reduction over l = (n, p, q): A[m][l] = x[n, c, p*sh - ph + r*dh, ...],
//                    B[l][j] = dy[n, j, p, q]; C[m][j] -> dw[j, c, r, s]. When there are few
//                    tiles and a long reduction, the reduction is split (split-K) into partial
//                    sums in the workspace, which a second kernel adds in a fixed order.
//
// The GEMM is the block tile of kernels/cuda/gemm_tile.cuh (double-buffered shared tiles, one
// barrier per step of 8, float4/double2 fragments): a block computes BM rows x BN cols, each
// thread an 8 x 4 or 8 x 8 register tile, warps of 8 x 4 threads along the rows (the pixels);
// Note [Choosing the tile] picks one of seven shapes by the column count, and the plan
// (conv2d_implicit_gemm_plan, kernels/conv_shape.h) says which ran. A direction adds only its
// loader (the gather above) and its epilogue (the scatter to NCHW + bias, or dw / a split's
// partial sum). Loads go along the pixel dimension across neighbouring threads (coalesced for
// stride 1). Each thread follows its (channel, r, s) or (n, p, q) position incrementally: no
// division in the main loop except the stride test of backward-data with stride > 1. Offsets
// are 64-bit.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/gemm_tile.cuh"
#include "kernels/kernel_table.h"

#include <stdexcept>
#include <string>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;
using namespace gemm_tile;

// A tile whose thread tile is 8 x 4 or 8 x 8, 4 x 4 sub-tiles half a block apart; warps of
// 8 x 4 threads along the pixels, which the loads gather and the epilogue writes contiguously.
template <int BM, int BN, int TN>
using Tile = BlockTile<BM, BN, 8, TN, WarpAlong::rows, false>;

// The shapes the plan chooses from (Note [Choosing the tile] below the kernels).
using Tile512x16 = Tile<512, 16, 4>;    // 256 threads: 64 along rows x 4 along cols
using Tile256x16 = Tile<256, 16, 4>;    // 128 threads, narrow and small (and float64)
using Tile256x32 = Tile<256, 32, 4>;    // 256 threads: 32 x 8
using Tile128x32 = Tile<128, 32, 4>;    // 128 threads, narrow and small
using Tile256x64 = Tile<256, 64, 8>;    // 256 threads: 32 x 8
using Tile128x64 = Tile<128, 64, 4>;    // 256 threads: 16 x 16
using Tile128x128 = Tile<128, 128, 8>;  // 256 threads: 16 x 16

// The shared tiles' rows a thread stores, for the loaders below: A's from rows tid % kARows +
// kARows * u, kAK reduction positions each; B's from reduction position tid % 8 and columns
// tid / 8 + kBStep * i (the last pass partial when the tile has fewer elements than threads).
template <typename C>
struct LoadShape {
  static constexpr int kARows = C::kBM < C::kThreads ? C::kBM : C::kThreads;
  static constexpr int kAK = kTileK * kARows / C::kThreads, kAPasses = C::kBM / kARows;
  static constexpr int kBLoads = (C::kBN * kTileK + C::kThreads - 1) / C::kThreads;
  static constexpr int kBStep = C::kThreads / kTileK;
  static constexpr bool kBFull = C::kBN * kTileK % C::kThreads == 0;
  static_assert((C::kBN * kTileK) % 32 == 0, "B loads by whole warps");
  // B's column i of this thread is in the tile.
  __device__ __forceinline__ static bool b_in_tile(int bj, int i) {
    return kBFull || bj + kBStep * i < C::kBN;
  }
};

// --- forward and backward-data ----------------------------------------------------------------

// The geometry of forward / backward-data as one gathered GEMM (see the top of the file).
struct GatherGemm {
  int64_t m;           // rows: N * mh * mw
  int64_t mh, mw;      // the row pixel grid (OH x OW forward, H x W backward-data)
  int cols;            // GEMM columns per group (K/G forward, C/G backward-data)
  int ca;              // gathered channels per group (C/G forward, K/G backward-data)
  int r, s;            // filter taps
  int64_t a_channels;  // channels of the gathered tensor (C forward, K backward-data)
  int64_t ah, aw;      // its spatial size
  int64_t out_channels;
  int64_t b_a, b_j;  // filter element strides along the gathered channel and along the column
  int sh, sw, ph, pw, dh, dw;
  int groups;
};

// One thread's position in the reduction (gathered channel a, filter tap r, s).
struct Tap {
  int a, r, s;
};
__device__ __forceinline__ void step_tap(Tap& t, int r, int s) {
  if (++t.s == s) {
    t.s = 0;
    if (++t.r == r) t.r = 0, ++t.a;
  }
}

// The loader of forward / backward-data: A gathered from the NCHW tensor at the taps of the
// thread's rows' pixels, B read from the filter. A row's pixel is fixed for the block (set up
// once), its tap is followed incrementally through the reduction (begin() per group).
template <typename T, typename C, bool kBackward>
struct GatherLoader {
  using L = LoadShape<C>;
  const GatherGemm& g;
  const int tid, rs, n0;
  const int64_t a_hw;
  bool am_ok[L::kAPasses];
  int64_t a_img[L::kAPasses];  // n * a_channels * a_hw
  int hb[L::kAPasses], wb[L::kAPasses];
  const int bk, bj;
  const T* ag;  // the group's gathered tensor and filters
  const T* wg;
  Tap at;  // the next A reduction position, stepped by load() and advance()
  int b_a, b_rs;
  T ra[L::kAK][L::kAPasses], rb[L::kBLoads];

  __device__ __forceinline__ GatherLoader(const GatherGemm& g_, int tid_, int64_t m0, int n0_)
      : g(g_),
        tid(tid_),
        rs(g_.r * g_.s),
        n0(n0_),
        a_hw(g_.ah * g_.aw),
        bk(tid_ % kTileK),
        bj(tid_ / kTileK) {
    const int64_t m_hw = g.mh * g.mw;
    for (int u = 0; u < L::kAPasses; ++u) {
      const int64_t am = m0 + tid % L::kARows + L::kARows * u;
      am_ok[u] = am < g.m;
      a_img[u] = 0, hb[u] = 0, wb[u] = 0;
      if (am_ok[u]) {
        const int64_t n = am / m_hw, pq = am % m_hw;
        const int p = int(pq / g.mw), q = int(pq % g.mw);
        a_img[u] = n * g.a_channels * a_hw;
        hb[u] = kBackward ? p + g.ph : p * g.sh - g.ph;
        wb[u] = kBackward ? q + g.pw : q * g.sw - g.pw;
      }
    }
  }
  __device__ __forceinline__ void begin(const T* a_src, const T* w, int64_t grp) {
    ag = a_src + grp * g.ca * a_hw;
    wg = w + grp * int64_t(g.cols) * g.ca * rs;
    const int k0 = L::kAK * (tid / L::kARows);
    at.a = k0 / rs, at.r = (k0 % rs) / g.s, at.s = k0 % g.s;
    b_a = bk / rs, b_rs = bk % rs;
  }
  __device__ __forceinline__ void load(int) {
    for (int i = 0; i < L::kAK; ++i) {
      for (int u = 0; u < L::kAPasses; ++u) {
        T v = T(0);
        if (am_ok[u] && at.a < g.ca) {
          int ih, iw;
          bool ok;
          if (kBackward) {
            const int th = hb[u] - at.r * g.dh, tw = wb[u] - at.s * g.dw;
            ok = th >= 0 && tw >= 0;
            if (g.sh == 1) {
              ih = th;
            } else {
              ih = th / g.sh;
              ok = ok && ih * g.sh == th;
            }
            if (g.sw == 1) {
              iw = tw;
            } else {
              iw = tw / g.sw;
              ok = ok && iw * g.sw == tw;
            }
            ok = ok && ih < g.ah && iw < g.aw;
          } else {
            ih = hb[u] + at.r * g.dh, iw = wb[u] + at.s * g.dw;
            ok = ih >= 0 && ih < g.ah && iw >= 0 && iw < g.aw;
          }
          if (ok) {
            v = ag[a_img[u] + at.a * a_hw + int64_t(ih) * g.aw + iw];
            EMBER_COUNT_WORK(0, sizeof(T));
          }
        }
        ra[i][u] = v;
      }
      step_tap(at, g.r, g.s);
    }
    for (int i = 0; i < L::kBLoads; ++i) {
      const int j = n0 + bj + L::kBStep * i;
      T v = T(0);
      if (L::b_in_tile(bj, i) && j < g.cols && b_a < g.ca) {
        v = wg[b_a * g.b_a + j * g.b_j + b_rs];
        EMBER_COUNT_WORK(0, sizeof(T));
      }
      rb[i] = v;
    }
  }
  __device__ __forceinline__ void advance() {
    for (int i = L::kAK; i < kTileK; ++i) step_tap(at, g.r, g.s);
    b_rs += kTileK;
    while (b_rs >= rs) b_rs -= rs, ++b_a;
  }
  __device__ __forceinline__ void store(T (*as)[C::kBM + kTilePad], T (*bs)[C::kBN + kTilePad]) {
    for (int i = 0; i < L::kAK; ++i)
      for (int u = 0; u < L::kAPasses; ++u)
        as[L::kAK * (tid / L::kARows) + i][tid % L::kARows + L::kARows * u] = ra[i][u];
    for (int i = 0; i < L::kBLoads; ++i)
      if (L::b_in_tile(bj, i)) bs[bk][bj + L::kBStep * i] = rb[i];
  }
};

// The epilogue of forward / backward-data: row m = (n, pixel), column j = channel of the group,
// scattered to NCHW (+ bias[j] forward).
template <typename T>
struct ScatterNchw {
  const GatherGemm& g;
  const T* bias;
  T* out;
  int64_t m0, grp;
  int n0;

  template <typename C>
  __device__ __forceinline__ void operator()(const T (&acc)[C::kTM][C::kTN],
                                             const ThreadTile<C>& t) const {
    const int64_t m_hw = g.mh * g.mw;
    for (int i = 0; i < C::kTM; ++i) {
      const int64_t m = m0 + t.row_of(i);
      if (m >= g.m) continue;
      const int64_t n = m / m_hw, pq = m % m_hw;
      T* o = out + (n * g.out_channels + grp * g.cols) * m_hw + pq;
      for (int jj = 0; jj < C::kTN; ++jj) {
        const int j = n0 + t.col_of(jj);
        if (j >= g.cols) continue;
        o[j * m_hw] = bias != nullptr ? acc[i][jj] + bias[grp * g.cols + j] : acc[i][jj];
        EMBER_COUNT_WORK(0, (bias != nullptr ? 2 : 1) * sizeof(T));
      }
    }
  }
};

template <typename T, typename C, bool kBackward>
__global__ void __launch_bounds__(C::kThreads)
    conv2d_gather_gemm_kernel(GatherGemm g, const T* __restrict__ a_src, const T* __restrict__ w,
                              const T* __restrict__ bias, T* __restrict__ out) {
  using Buffers = TileBuffers<T, C>;
  EMBER_DYNAMIC_SHARED(Buffers, tiles);  // Note [Tiles in dynamic shared memory]
  Buffers& sm = *tiles;
  const ThreadTile<C> t(threadIdx.x);
  const int64_t m0 = int64_t(blockIdx.x) * C::kBM;
  const int n0 = int(blockIdx.y) * C::kBN;
  const int steps = (g.ca * g.r * g.s + kTileK - 1) / kTileK;
  GatherLoader<T, C, kBackward> ld(g, threadIdx.x, m0, n0);
  for (int64_t grp = blockIdx.z; grp < g.groups; grp += gridDim.z) {
    ld.begin(a_src, w, grp);
    block_tile_gemm(sm, t, steps, ld, ScatterNchw<T>{g, bias, out, m0, grp, n0});
  }
}

// --- backward-filter ---------------------------------------------------------------------------

struct WgradGemm {
  int64_t n, c, h, w, k, oh, ow;
  int cg, kg, r, s;
  int sh, sw, ph, pw, dh, dw;
  int groups, splits;
  int64_t chunk;      // reduction length per split, a multiple of kTileK
  int64_t part_size;  // elements of dw (one partial sum)
};

// The loader of backward-filter: A gathered from x at the (c, r, s) of the thread's rows (fixed
// for the block) and the reduction's pixel l = (n, p, q), B read from dy at l; l is followed
// incrementally from the split's start (begin() per group and split).
template <typename T, typename C>
struct WgradLoader {
  // Loads: reduction offset tid % 8, rows (cols) tid / 8 + kStep * i.
  static constexpr int kStep = C::kThreads / kTileK;
  static constexpr int kALoads = C::kBM * kTileK / C::kThreads;
  static constexpr int kBLoads = LoadShape<C>::kBLoads;
  const WgradGemm& g;
  const int n0, kl, lr;
  const int64_t hw, pq, total;
  int64_t a_c[kALoads];  // channel offset c * hw
  int a_r[kALoads], a_s[kALoads];
  bool a_ok[kALoads];
  const T* xg;  // the group's x and dy
  const T* dyg;
  int64_t l, l_end, ln;  // the thread's reduction position l = (ln, lp, lq)
  int lp, lq;
  T ra[kALoads], rb[kBLoads];

  __device__ __forceinline__ WgradLoader(const WgradGemm& g_, int tid, int64_t m0, int n0_)
      : g(g_),
        n0(n0_),
        kl(tid % kTileK),
        lr(tid / kTileK),
        hw(g_.h * g_.w),
        pq(g_.oh * g_.ow),
        total(g_.n * g_.oh * g_.ow) {
    const int rs = g.r * g.s;
    const int64_t rows = int64_t(g.cg) * rs;
    for (int i = 0; i < kALoads; ++i) {
      const int64_t m = m0 + lr + kStep * i;
      a_ok[i] = m < rows;
      const int c = int(m / rs), t = int(m % rs);
      a_c[i] = int64_t(c) * hw;
      a_r[i] = (t / g.s) * g.dh - g.ph;
      a_s[i] = (t % g.s) * g.dw - g.pw;
    }
  }
  __device__ __forceinline__ void begin(const T* x, const T* dy, int64_t grp, int64_t l_begin,
                                        int64_t l_end_) {
    xg = x + grp * g.cg * hw;
    dyg = dy + grp * g.kg * pq;
    l = l_begin + kl, l_end = l_end_, ln = 0, lp = 0, lq = 0;
    if (l < total) ln = l / pq, lp = int((l % pq) / g.ow), lq = int(l % g.ow);
  }
  __device__ __forceinline__ void load(int) {
    const bool l_ok = l < l_end;
    const int ih0 = lp * g.sh, iw0 = lq * g.sw;
    for (int i = 0; i < kALoads; ++i) {
      const int ih = ih0 + a_r[i], iw = iw0 + a_s[i];
      const bool ok = l_ok && a_ok[i] && ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
      ra[i] = ok ? xg[ln * g.c * hw + a_c[i] + int64_t(ih) * g.w + iw] : T(0);
      if (ok) EMBER_COUNT_WORK(0, sizeof(T));
    }
    for (int i = 0; i < kBLoads; ++i) {
      const int j = n0 + lr + kStep * i;
      const bool ok = l_ok && LoadShape<C>::b_in_tile(lr, i) && j < g.kg;
      rb[i] = ok ? dyg[(ln * g.k + j) * pq + int64_t(lp) * g.ow + lq] : T(0);
      if (ok) EMBER_COUNT_WORK(0, sizeof(T));
    }
  }
  __device__ __forceinline__ void advance() {
    l += kTileK;
    lq += kTileK;
    while (lq >= g.ow) {
      lq -= int(g.ow);
      if (++lp == g.oh) lp = 0, ++ln;
    }
  }
  __device__ __forceinline__ void store(T (*as)[C::kBM + kTilePad], T (*bs)[C::kBN + kTilePad]) {
    for (int i = 0; i < kALoads; ++i) as[kl][lr + kStep * i] = ra[i];
    for (int i = 0; i < kBLoads; ++i)
      if (LoadShape<C>::b_in_tile(lr, i)) bs[kl][lr + kStep * i] = rb[i];
  }
};

// The epilogue of backward-filter: row m = (c, r, s), column j = filter of the group, to dw (or
// to the split's partial sum). Its addresses are computed here, after the main loop, so they hold
// no registers during it.
template <typename T>
struct StoreFilter {
  const WgradGemm& g;
  T* out;  // dw, or the partial sums
  int64_t grp, split, m0, rows;
  int n0;

  template <typename C>
  __device__ __forceinline__ void operator()(const T (&acc)[C::kTM][C::kTN],
                                             const ThreadTile<C>& t) const {
    T* o = out + split * g.part_size + grp * g.kg * rows;
    for (int i = 0; i < C::kTM; ++i) {
      const int64_t m = m0 + t.row_of(i);
      if (m >= rows) continue;
      for (int jj = 0; jj < C::kTN; ++jj) {
        const int j = n0 + t.col_of(jj);
        if (j < g.kg) {
          o[j * rows + m] = acc[i][jj];
          EMBER_COUNT_WORK(0, sizeof(T));
        }
      }
    }
  }
};

template <typename T, typename C>
__global__ void __launch_bounds__(C::kThreads)
    conv2d_wgrad_gemm_kernel(WgradGemm g, const T* __restrict__ dy, const T* __restrict__ x,
                             T* __restrict__ out) {
  using Buffers = TileBuffers<T, C>;
  EMBER_DYNAMIC_SHARED(Buffers, tiles);  // Note [Tiles in dynamic shared memory]
  Buffers& sm = *tiles;
  const ThreadTile<C> t(threadIdx.x);
  const int64_t rows = int64_t(g.cg) * g.r * g.s;
  const int64_t m0 = int64_t(blockIdx.x) * C::kBM;
  const int n0 = int(blockIdx.y) * C::kBN;
  const int64_t total = g.n * g.oh * g.ow;
  WgradLoader<T, C> ld(g, threadIdx.x, m0, n0);
  for (int64_t z = blockIdx.z; z < int64_t(g.groups) * g.splits; z += gridDim.z) {
    const int64_t grp = z / g.splits, split = z % g.splits;
    const int64_t l_begin = split * g.chunk;
    const int64_t l_end = l_begin + g.chunk < total ? l_begin + g.chunk : total;
    ld.begin(x, dy, grp, l_begin, l_end);
    const int steps = l_end > l_begin ? int((l_end - l_begin + kTileK - 1) / kTileK) : 0;
    block_tile_gemm(sm, t, steps, ld, StoreFilter<T>{g, out, grp, split, m0, rows, n0});
  }
}

// dw[i] = sum over splits of part[s][i], in split order (deterministic).
template <typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_wgrad_reduce_kernel(int splits, int64_t n, const T* __restrict__ part,
                               T* __restrict__ dw) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    T acc = part[i];
    for (int s = 1; s < splits; ++s) acc += part[s * n + i];
    dw[i] = acc;
    EMBER_COUNT_WORK(0, (splits + 1) * sizeof(T));
  }
}

// --- the plan and the launchers ----------------------------------------------------------------

void check_scalar(DType t, const char* op) {
  if (t != DType::f32 && t != DType::f64)
    throw std::invalid_argument(std::string(op) + ": only float32 and float64 kernels exist");
}

// Note [Choosing the tile]
// The columns per group set a width class, each with a big tile and smaller ones for grids
// that would not fill the GPU: the plan takes the first whose grid has at least one block
// per multiprocessor, else the last.
//   cols <= 16: 512 x 16 (8 x 4 per thread), 256 x 16 (128 threads; float64 always, as
//               512 x 16 would need 66 KB of shared memory);
//   cols <= 32: 256 x 32 (8 x 4), 128 x 32 (128 threads);
//   cols <= 64: 256 x 64 (8 x 8), 128 x 64 (8 x 4), 128 x 32;
//   wider:      128 x 128 (8 x 8), 128 x 64, 128 x 32.
// Smaller tiles keep the 8 x 4 thread tile and use fewer threads rather than thinner tiles:
// ResNet-20's 64-filter layer (8192 x 64) gets 128 blocks of 128 threads, not 64 of 256.
// Backward-filter fills the GPU by splitting its reduction instead, so it takes whichever of
// its class's first two tiles pads its few rows (C/G*R*S) and its columns least.
struct TileChoice {
  int bm, bn, tn;
};

constexpr TileChoice kT512x16{512, 16, 4}, kT256x16{256, 16, 4}, kT256x32{256, 32, 4},
    kT128x32{128, 32, 4}, kT256x64{256, 64, 8}, kT128x64{128, 64, 4}, kT128x128{128, 128, 8};

// The tiles of the width class of cols, biggest first (Note [Choosing the tile]).
struct TileClass {
  TileChoice tiles[3];
  int n;
};
TileClass tile_class(int64_t cols, bool f64) {
  if (cols <= 16) return f64 ? TileClass{{kT256x16}, 1} : TileClass{{kT512x16, kT256x16}, 2};
  if (cols <= 32) return {{kT256x32, kT128x32}, 2};
  if (cols <= 64) return {{kT256x64, kT128x64, kT128x32}, 3};
  return {{kT128x128, kT128x64, kT128x32}, 3};
}

int64_t tile_count(const TileChoice& t, int64_t rows, int64_t cols) {
  return (rows + t.bm - 1) / t.bm * ((cols + t.bn - 1) / t.bn);
}

TileChoice gather_tile(int64_t rows, int64_t cols, int64_t groups, bool f64) {
  const TileClass c = tile_class(cols, f64);
  for (int i = 0; i + 1 < c.n; ++i)
    if (tile_count(c.tiles[i], rows, cols) * groups >= multiprocessors()) return c.tiles[i];
  return c.tiles[c.n - 1];
}

TileChoice wgrad_tile(int64_t rows, int64_t cols, bool f64) {
  const TileClass c = tile_class(cols, f64);
  const TileChoice& big = c.tiles[0];
  const TileChoice& small = c.tiles[c.n > 1 ? 1 : 0];
  // 256 x 64 spills in float64 (255 registers with its eight rows of gather state).
  if (f64 && big.bm == 256 && big.bn == 64) return small;
  auto area = [&](const TileChoice& t) { return tile_count(t, rows, cols) * t.bm * t.bn; };
  return area(small) < area(big) ? small : big;
}

// The split of backward-filter's reduction: enough blocks to fill a large GPU (about 4 per
// multiprocessor of an H100-class part), each split at least 32 steps long, at most 64 splits.
int wgrad_splits(const ConvShape& s, int64_t tiles) {
  const int64_t want = (512 + tiles - 1) / tiles;
  const int64_t most = s.n * s.oh * s.ow / (32 * kTileK);
  int64_t splits = want < most ? want : most;
  splits = splits < 64 ? splits : 64;
  return splits > 1 ? int(splits) : 1;
}

// f(Tile<...>{}) for the plan's tile.
template <typename F>
void with_tile(const ConvGemmPlan& p, F&& f) {
  if (p.bn == 16) return p.bm == 512 ? f(Tile512x16{}) : f(Tile256x16{});
  if (p.bn == 32) return p.bm == 256 ? f(Tile256x32{}) : f(Tile128x32{});
  if (p.bn == 64) return p.bm == 256 ? f(Tile256x64{}) : f(Tile128x64{});
  return f(Tile128x128{});
}

dim3 grid_of(const ConvGemmPlan& p) {
  return dim3(p.grid[0], p.grid[1], p.grid[2]);
}

template <typename T, bool kBackward>
void launch_gather(const ConvGemmPlan& p, const GatherGemm& g, const void* a, const void* w,
                   const void* bias, void* out, gpu::Stream stream) {
  const T* ap = static_cast<const T*>(a);
  const T* wp = static_cast<const T*>(w);
  const T* bp = static_cast<const T*>(bias);
  T* op = static_cast<T*>(out);
  with_tile(p, [&](auto c) {
    using C = decltype(c);
    // 512 x 16 is never chosen for float64 (its tiles would not fit in 48 KiB of shared memory).
    if constexpr (!std::is_same_v<T, double> || !std::is_same_v<C, Tile512x16>) {
      auto* k = &conv2d_gather_gemm_kernel<T, C, kBackward>;
      using Buffers = TileBuffers<T, C>;
      EMBER_LAUNCH(k, grid_of(p), dim3(C::kThreads), sizeof(Buffers), stream, g, ap, wp, bp, op);
    }
  });
}

GatherGemm gather_common(const ConvShape& s) {
  GatherGemm g{};
  g.r = int(s.r), g.s = int(s.s);
  g.sh = int(s.stride_h), g.sw = int(s.stride_w), g.ph = int(s.pad_h), g.pw = int(s.pad_w);
  g.dh = int(s.dil_h), g.dw = int(s.dil_w);
  g.groups = int(s.groups);
  return g;
}

}  // namespace

bool conv2d_implicit_gemm_supports(DType t, const ConvShape&, ConvDirection, const char** why) {
  if (t == DType::f32 || t == DType::f64) return true;
  if (why) *why = "the GPU implicit-GEMM kernels exist for float32 and float64 only";
  return false;
}

ConvGemmPlan conv2d_implicit_gemm_plan(DType t, const ConvShape& s, ConvDirection d) {
  check_scalar(t, "conv2d_implicit_gemm_plan");
  const bool f64 = t == DType::f64;
  ConvGemmPlan p;
  TileChoice tile;
  int64_t z;  // grid z items: groups, times splits for backward-filter
  if (d == ConvDirection::backward_filter) {
    p.rows = s.cg() * s.r * s.s, p.cols = s.kg(), p.depth = s.n * s.oh * s.ow;
    if (p.rows == 0 || p.cols == 0) return p;
    tile = wgrad_tile(p.rows, p.cols, f64);
    p.splits = wgrad_splits(s, tile_count(tile, p.rows, p.cols) * s.groups);
    p.chunk = ((p.depth + p.splits - 1) / p.splits + kTileK - 1) / kTileK * kTileK;
    const size_t item = f64 ? sizeof(double) : sizeof(float);
    if (p.splits > 1) p.workspace_bytes = size_t(p.splits) * size_t(s.w_numel()) * item;
    z = s.groups * p.splits;
  } else {
    const bool fwd = d == ConvDirection::forward;
    p.rows = fwd ? s.n * s.oh * s.ow : s.n * s.h * s.w;
    p.cols = fwd ? s.kg() : s.cg();
    p.depth = (fwd ? s.cg() : s.kg()) * s.r * s.s;
    if (p.rows == 0 || p.cols == 0) return p;
    tile = gather_tile(p.rows, p.cols, s.groups, f64);
    p.chunk = p.depth;
    z = s.groups;
  }
  p.kernel = ConvGemmKernel::tiled;
  p.bm = tile.bm, p.bn = tile.bn, p.tm = 8, p.tn = tile.tn;
  p.threads = tile.bm / 8 * (tile.bn / tile.tn);
  p.grid[0] = static_cast<unsigned>((p.rows + tile.bm - 1) / tile.bm);
  p.grid[1] = static_cast<unsigned>((p.cols + tile.bn - 1) / tile.bn);
  const int64_t limit = max_grid_yz();
  p.grid[2] = static_cast<unsigned>(z < limit ? z : limit);
  return p;
}

void conv2d_fwd_implicit_gemm(DType t, const ConvShape& s, const void* x, const void* w,
                              const void* bias, void* y, void*, size_t, gpu::Stream stream) {
  check_scalar(t, "conv2d_fwd_implicit_gemm");
  const ConvGemmPlan p = conv2d_implicit_gemm_plan(t, s, ConvDirection::forward);
  if (p.kernel == ConvGemmKernel::none) return;
  GatherGemm g = gather_common(s);
  g.m = p.rows, g.mh = s.oh, g.mw = s.ow;
  g.cols = int(p.cols), g.ca = int(s.cg());
  g.a_channels = s.c, g.ah = s.h, g.aw = s.w, g.out_channels = s.k;
  g.b_a = s.r * s.s, g.b_j = int64_t(g.ca) * s.r * s.s;
  if (t == DType::f32)
    launch_gather<float, false>(p, g, x, w, bias, y, stream);
  else
    launch_gather<double, false>(p, g, x, w, bias, y, stream);
}

void conv2d_bwd_data_implicit_gemm(DType t, const ConvShape& s, const void* dy, const void* w,
                                   void* dx, void*, size_t, gpu::Stream stream) {
  check_scalar(t, "conv2d_bwd_data_implicit_gemm");
  const ConvGemmPlan p = conv2d_implicit_gemm_plan(t, s, ConvDirection::backward_data);
  if (p.kernel == ConvGemmKernel::none) return;
  GatherGemm g = gather_common(s);
  g.m = p.rows, g.mh = s.h, g.mw = s.w;
  g.cols = int(p.cols), g.ca = int(s.kg());
  g.a_channels = s.k, g.ah = s.oh, g.aw = s.ow, g.out_channels = s.c;
  g.b_a = int64_t(g.cols) * s.r * s.s, g.b_j = s.r * s.s;
  if (t == DType::f32)
    launch_gather<float, true>(p, g, dy, w, nullptr, dx, stream);
  else
    launch_gather<double, true>(p, g, dy, w, nullptr, dx, stream);
}

// Only the filter gradient needs scratch memory: its split-K partial sums.
size_t conv2d_implicit_gemm_workspace_bytes(DType t, const ConvShape& s, ConvDirection d) {
  if (d != ConvDirection::backward_filter || (t != DType::f32 && t != DType::f64)) return 0;
  return conv2d_implicit_gemm_plan(t, s, d).workspace_bytes;
}

void conv2d_bwd_filter_implicit_gemm(DType t, const ConvShape& s, const void* dy, const void* x,
                                     void* dw, void* workspace, size_t ws_bytes,
                                     gpu::Stream stream) {
  check_scalar(t, "conv2d_bwd_filter_implicit_gemm");
  const ConvGemmPlan p = conv2d_implicit_gemm_plan(t, s, ConvDirection::backward_filter);
  if (p.kernel == ConvGemmKernel::none) return;
  if (ws_bytes < p.workspace_bytes)
    throw std::invalid_argument("conv2d_bwd_filter_implicit_gemm: the workspace is too small");
  WgradGemm g{};
  g.n = s.n, g.c = s.c, g.h = s.h, g.w = s.w, g.k = s.k, g.oh = s.oh, g.ow = s.ow;
  g.cg = int(s.cg()), g.kg = int(s.kg()), g.r = int(s.r), g.s = int(s.s);
  g.sh = int(s.stride_h), g.sw = int(s.stride_w), g.ph = int(s.pad_h), g.pw = int(s.pad_w);
  g.dh = int(s.dil_h), g.dw = int(s.dil_w);
  g.groups = int(s.groups);
  g.splits = p.splits, g.chunk = p.chunk, g.part_size = s.w_numel();
  void* out = g.splits > 1 ? workspace : dw;
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const T* d = static_cast<const T*>(dy);
    const T* xp = static_cast<const T*>(x);
    T* op = static_cast<T*>(out);
    with_tile(p, [&](auto c) {
      using C = decltype(c);
      // Never chosen for float64: 512 x 16 (shared memory) and 256 x 64 (registers).
      if constexpr (!std::is_same_v<T, double> ||
                    !(std::is_same_v<C, Tile512x16> || std::is_same_v<C, Tile256x64>)) {
        auto* k = &conv2d_wgrad_gemm_kernel<T, C>;
        using Buffers = TileBuffers<T, C>;
        EMBER_LAUNCH(k, grid_of(p), dim3(C::kThreads), sizeof(Buffers), stream, g, d, xp, op);
      }
    });
    if (g.splits > 1)
      EMBER_LAUNCH(conv2d_wgrad_reduce_kernel<T>, dim3(blocks_for(g.part_size)), dim3(kBlock), 0,
                   stream, g.splits, g.part_size, static_cast<const T*>(out), static_cast<T*>(dw));
  };
  if (t == DType::f32)
    run(float(0));
  else
    run(double(0));
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

// Winograd convolution F(2x2, 3x3) and F(4x4, 3x3) on the GPU backends, non-fused: the tables,
// the per-tile transforms are kernels/winograd_math.h's, the geometry and the workspace
// kernels/winograd_shape.h's, both shared with the CPU.
//   1. conv2d_winograd_filter_kernel   one thread per (o, i): U[xi][o][i] = (G g_oi G^T)[xi]
//   2. conv2d_winograd_input_kernel    one thread per (i, tile): V[xi][i][t] = (B^T d_it B)[xi],
//                                      the tile read with the padding as zeros
//   3. gemm_batched (kernels/cuda/gemm.cu)  alpha^2 products M[xi] = U[xi] . V[xi]: Ember's own
//                                      GEMM in full float32 (or float64), never TF32
//   4. conv2d_winograd_output_kernel   one thread per (o, tile): y = A^T M_ot A (+ bias), the
//                                      tile's rows and columns past the output dropped
// Neighbouring threads take neighbouring tiles, so the V and M traffic (the bulk) is coalesced.
// Work counted (EMBER_COUNT_WORK): the elements each thread loads and stores (not the padding),
// and the fused kernel's 2 flops per multiply-add of its products; the transforms' additions are
// not counted (the cost model prices them by the elements moved).
// Fused F(2x2, 3x3): kernel 1, then conv2d_winograd_fused_kernel in place of 2 to 4 (Note [Fused
// Winograd F(2x2, 3x3)]). Every element is written by one thread and summed in a fixed order:
// deterministic.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"
#include "kernels/winograd_math.h"

#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

template <int M, typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_winograd_filter_kernel(WinogradGeometry g, const T* __restrict__ w, T* __restrict__ u) {
  constexpr int A = M + 2;
  const int64_t plane = g.co * g.ci;
  for (int64_t e = global_thread(); e < plane; e += grid_threads()) {
    const int64_t o = e / g.ci, i = e % g.ci;
    T f[3][3], ut[A][A];
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) f[r][s] = w[g.filter_index(o, i, r, s)];
    winograd_filter_transform<M>(f, ut);
    for (int a = 0; a < A; ++a)
      for (int b = 0; b < A; ++b) u[(a * A + b) * plane + e] = ut[a][b];
    EMBER_COUNT_WORK(0, (9 + A * A) * sizeof(T));
  }
}

template <int M, typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_winograd_input_kernel(WinogradGeometry g, const T* __restrict__ in, T* __restrict__ v) {
  constexpr int A = M + 2;
  const int64_t tiles = g.tiles(), plane = g.ci * tiles, per_image = g.tiles_h * g.tiles_w;
  for (int64_t e = global_thread(); e < plane; e += grid_threads()) {
    const int64_t i = e / tiles, t = e % tiles;
    const int64_t n = t / per_image, ty = t % per_image / g.tiles_w, tx = t % g.tiles_w;
    const T* x = in + (n * g.ci + i) * g.h * g.w;
    const int64_t h0 = ty * M - g.ph, w0 = tx * M - g.pw;
    T d[A][A], vt[A][A];
    for (int a = 0; a < A; ++a)
      for (int b = 0; b < A; ++b) {
        const int64_t ih = h0 + a, iw = w0 + b;
        const bool in_image = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
        d[a][b] = in_image ? x[ih * g.w + iw] : T(0);
        if (in_image) EMBER_COUNT_WORK(0, sizeof(T));
      }
    winograd_input_transform<M>(d, vt);
    for (int a = 0; a < A; ++a)
      for (int b = 0; b < A; ++b) v[(a * A + b) * plane + e] = vt[a][b];
    EMBER_COUNT_WORK(0, A * A * sizeof(T));
  }
}

template <int M, typename T>
__global__ void __launch_bounds__(kBlock)
    conv2d_winograd_output_kernel(WinogradGeometry g, const T* __restrict__ m,
                                  const T* __restrict__ bias, T* __restrict__ out) {
  constexpr int A = M + 2;
  const int64_t tiles = g.tiles(), plane = g.co * tiles, per_image = g.tiles_h * g.tiles_w;
  for (int64_t e = global_thread(); e < plane; e += grid_threads()) {
    const int64_t o = e / tiles, t = e % tiles;
    const int64_t n = t / per_image, ty = t % per_image / g.tiles_w, tx = t % g.tiles_w;
    T mt[A][A], yt[M][M];
    for (int a = 0; a < A; ++a)
      for (int b = 0; b < A; ++b) mt[a][b] = m[(a * A + b) * plane + e];
    winograd_output_transform<M>(mt, yt);
    const T b0 = bias != nullptr ? bias[o] : T(0);
    T* y = out + (n * g.co + o) * g.oh * g.ow;
    int stored = 0;
    for (int a = 0; a < M; ++a)
      for (int b = 0; b < M; ++b) {
        const int64_t p = ty * M + a, q = tx * M + b;
        if (p < g.oh && q < g.ow) y[p * g.ow + q] = yt[a][b] + b0, ++stored;
      }
    EMBER_COUNT_WORK(0, (A * A + stored + (bias != nullptr ? 1 : 0)) * sizeof(T));
  }
}

// Note [Fused Winograd F(2x2, 3x3)]
// One block computes a 16 x 16 tile of (output channel, output tile) pairs at all 16 positions xi
// of the 4 x 4 transform, so V and M never leave the chip (Lavin & Gray's fused kernel):
//   for each chunk of kChunk input channels:
//     the chunk's input tiles (16 tiles x kChunk channels, zeros outside the image) are read and
//     transformed, V[xi][c][t] = (B^T d B)[xi], into shared memory, and the chunk's
//     U[xi][k][c] (kernel 1's filter transforms, made once per call) is staged beside it;
//     thread (xi, kq, tq) adds the 4 x 4 outer product U[xi][c][4kq..4kq+3] x
//     V[xi][c][4tq..4tq+3] over the chunk's channels: 16 multiply-adds per two 4-element reads;
//   the 16 x 256 sums go through shared memory (over U and V) so that each thread holds the 16
//   positions of one (k, t), and y = A^T M A (+ bias) is written, outputs past the edge dropped.
// Each block re-reads its tiles' inputs and its channels' U from memory (mostly L2); what the
// fusion saves is V and M's round trip, alpha^2 (ci + co) elements a tile. blockIdx.y walks the
// output channels, looping past the grid's limit.
template <typename T>
struct FusedF2 {
  static constexpr int kTileK = WinogradFusedBlock::kChannels, kTileT = WinogradFusedBlock::kTiles;
  static constexpr int kThreads = WinogradFusedBlock::kThreads;
  static constexpr int kChunk = WinogradFusedBlock::chunk(sizeof(T));  // input channels a stage
  static constexpr int kStage = 16 * kChunk * (kTileK + kTileT);
  static constexpr int kExchange = 16 * kTileK * kTileT;
  static constexpr int kShared = kStage > kExchange ? kStage : kExchange;  // 32 KiB
};

template <typename T>
__global__ void __launch_bounds__(256)
    conv2d_winograd_fused_kernel(WinogradGeometry g, const T* __restrict__ in,
                                 const T* __restrict__ u, const T* __restrict__ bias,
                                 T* __restrict__ out) {
  using F = FusedF2<T>;
  constexpr int BK = F::kTileK, BT = F::kTileT, BC = F::kChunk;
  EMBER_DYNAMIC_SHARED(T, smem);  // F::kShared elements (Note [Tiles in dynamic shared memory])
  T* us = smem;                   // [16][BC][BK]
  T* vs = smem + 16 * BC * BK;    // [16][BC][BT]
  T* ms = smem;                   // [16][BK][BT], after the last chunk
  const int tid = threadIdx.x, xi = tid / 16, kq = tid % 16 / 4, tq = tid % 4;
  const int64_t tiles = g.tiles(), per_image = g.tiles_h * g.tiles_w;
  const int64_t t0 = int64_t(blockIdx.x) * BT;
  for (int64_t k0 = int64_t(blockIdx.y) * BK; k0 < g.co; k0 += int64_t(gridDim.y) * BK) {
    T acc[4][4];
    for (int r = 0; r < 4; ++r)
      for (int s = 0; s < 4; ++s) acc[r][s] = T(0);
    for (int64_t c0 = 0; c0 < g.ci; c0 += BC) {
      for (int e = tid; e < BC * BT; e += F::kThreads) {  // V: one input tile a thread
        const int c = e / BT, tl = e % BT;
        const int64_t i = c0 + c, t = t0 + tl;
        T d[4][4], v[4][4];
        const bool live = i < g.ci && t < tiles;
        const int64_t n = live ? t / per_image : 0, ty = t % per_image / g.tiles_w;
        const int64_t tx = t % g.tiles_w;
        const T* x = in + (n * g.ci + (live ? i : 0)) * g.h * g.w;
        const int64_t h0 = ty * 2 - g.ph, w0 = tx * 2 - g.pw;
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b) {
            const int64_t ih = h0 + a, iw = w0 + b;
            const bool in_image = live && ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
            d[a][b] = in_image ? x[ih * g.w + iw] : T(0);
            if (in_image) EMBER_COUNT_WORK(0, sizeof(T));
          }
        winograd_input_transform<2>(d, v);
        for (int p = 0; p < 16; ++p) vs[(p * BC + c) * BT + tl] = v[p / 4][p % 4];
      }
      for (int e = tid; e < 16 * BK * BC; e += F::kThreads) {  // U: channels fastest, coalesced
        const int p = e / (BK * BC), k = e / BC % BK, c = e % BC;
        const int64_t o = k0 + k, i = c0 + c;
        const bool ok = o < g.co && i < g.ci;
        us[(p * BC + c) * BK + k] = ok ? u[(p * g.co + o) * g.ci + i] : T(0);
        if (ok) EMBER_COUNT_WORK(0, sizeof(T));
      }
      __syncthreads();
      for (int c = 0; c < BC; ++c) {
        const T* a = us + (xi * BC + c) * BK + 4 * kq;
        const T* b = vs + (xi * BC + c) * BT + 4 * tq;
        for (int r = 0; r < 4; ++r)
          for (int s = 0; s < 4; ++s) acc[r][s] += a[r] * b[s];
      }
      EMBER_COUNT_WORK(2 * 16 * BC, 0);
      __syncthreads();
    }
    for (int r = 0; r < 4; ++r)
      for (int s = 0; s < 4; ++s) ms[(xi * BK + 4 * kq + r) * BT + 4 * tq + s] = acc[r][s];
    __syncthreads();
    const int k = tid / BT, tl = tid % BT;
    const int64_t o = k0 + k, t = t0 + tl;
    if (o < g.co && t < tiles) {
      T m[4][4], y[2][2];
      for (int p = 0; p < 16; ++p) m[p / 4][p % 4] = ms[(p * BK + k) * BT + tl];
      winograd_output_transform<2>(m, y);
      const int64_t n = t / per_image, ty = t % per_image / g.tiles_w, tx = t % g.tiles_w;
      const T b0 = bias != nullptr ? bias[o] : T(0);
      T* dst = out + (n * g.co + o) * g.oh * g.ow;
      int stored = 0;
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
          const int64_t p = ty * 2 + a, q = tx * 2 + b;
          if (p < g.oh && q < g.ow) dst[p * g.ow + q] = y[a][b] + b0, ++stored;
        }
      EMBER_COUNT_WORK(0, (stored + (bias != nullptr ? 1 : 0)) * sizeof(T));
    }
    __syncthreads();  // ms is the next channel tile's U and V
  }
}

template <int M, typename T>
void winograd(const WinogradGeometry& g, DType t, const T* in, const T* w, const T* bias, T* out,
              T* ws, gpu::Stream stream) {
  if (g.n * g.co * g.oh * g.ow == 0) return;
  T* u = ws;
  T* v = u + g.u_elems();
  T* m = v + g.v_elems();
  auto* filter = &conv2d_winograd_filter_kernel<M, T>;
  auto* input = &conv2d_winograd_input_kernel<M, T>;
  auto* output = &conv2d_winograd_output_kernel<M, T>;
  if (g.co * g.ci > 0) {
    EMBER_LAUNCH(filter, dim3(blocks_for(g.co * g.ci)), dim3(kBlock), 0, stream, g, w, u);
    EMBER_LAUNCH(input, dim3(blocks_for(g.ci * g.tiles())), dim3(kBlock), 0, stream, g, in, v);
  }
  gemm_batched(t, winograd_products_shape(g), u, v, m, stream);
  EMBER_LAUNCH(output, dim3(blocks_for(g.co * g.tiles())), dim3(kBlock), 0, stream, g, m, bias,
               out);
}

// F(2x2, 3x3) fused: the filter transforms into the workspace (U), then one kernel.
template <typename T>
void winograd_fused(const WinogradGeometry& g, const T* in, const T* w, const T* bias, T* out, T* u,
                    gpu::Stream stream) {
  if (g.n * g.co * g.oh * g.ow == 0) return;
  using F = FusedF2<T>;
  auto* filter = &conv2d_winograd_filter_kernel<2, T>;
  auto* fused = &conv2d_winograd_fused_kernel<T>;
  if (g.co * g.ci > 0)
    EMBER_LAUNCH(filter, dim3(blocks_for(g.co * g.ci)), dim3(kBlock), 0, stream, g, w, u);
  const int64_t k_tiles = (g.co + F::kTileK - 1) / F::kTileK, limit = max_grid_yz();
  const dim3 grid(static_cast<unsigned>((g.tiles() + F::kTileT - 1) / F::kTileT),
                  static_cast<unsigned>(k_tiles < limit ? k_tiles : limit));
  EMBER_LAUNCH(fused, grid, dim3(F::kThreads), sizeof(T) * F::kShared, stream, g, in, u, bias, out);
}

void run(DType t, WinogradTile tile, const WinogradGeometry& g, const void* in, const void* w,
         const void* bias, void* out, void* workspace, size_t workspace_bytes, const char* op,
         gpu::Stream stream) {
  dispatch_float(t, op, [&](auto z) {
    using T = decltype(z);
    if (workspace_bytes < winograd_workspace_bytes(g, sizeof(T)))
      throw std::invalid_argument(std::string(op) + ": the Winograd workspace is too small");
    auto* ws = static_cast<T*>(workspace);
    const T* i = static_cast<const T*>(in);
    const T* f = static_cast<const T*>(w);
    const T* b = static_cast<const T*>(bias);
    T* o = static_cast<T*>(out);
    if (tile == WinogradTile::f2x2_3x3_fused)
      winograd_fused(g, i, f, b, o, ws, stream);
    else if (tile == WinogradTile::f4x4_3x3)
      winograd<4>(g, t, i, f, b, o, ws, stream);
    else
      winograd<2>(g, t, i, f, b, o, ws, stream);
  });
}

}  // namespace

void conv2d_fwd_winograd(DType t, WinogradTile tile, const ConvShape& s, const void* x,
                         const void* w, const void* bias, void* y, void* workspace,
                         size_t workspace_bytes, gpu::Stream stream) {
  run(t, tile, winograd_geometry(tile, s, ConvDirection::forward), x, w, bias, y, workspace,
      workspace_bytes, "conv2d_fwd_winograd", stream);
}

void conv2d_bwd_data_winograd(DType t, WinogradTile tile, const ConvShape& s, const void* dy,
                              const void* w, void* dx, void* workspace, size_t workspace_bytes,
                              gpu::Stream stream) {
  run(t, tile, winograd_geometry(tile, s, ConvDirection::backward_data), dy, w, nullptr, dx,
      workspace, workspace_bytes, "conv2d_bwd_data_winograd", stream);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

// GEMM on the GPU backends: C = A x B per batch, operands read through their strides.
//
// Two kernels. The general one (gemm_tiled_kernel) is the textbook tiling: 64 x 64 block tiles,
// 16 x 16 threads with 4 x 4 register tiles, scalar bounds-checked loads through any strides.
// It serves float64, operands with no unit stride in their matrix dims (sliced views) and is
// the reference the fast one is tested against.
//
// The fast one (gemm_f32_kernel) is the classic SGEMM for float32 whose operands each have a
// unit stride along one matrix dim, which is every layout ops/matmul makes from contiguous
// tensors and their transposes. It is the block tile of kernels/cuda/gemm_tile.cuh (double-
// buffered shared tiles, float4 fragments, one barrier per step of 8) with strided matrix loads:
// - A block of 256 threads computes a BM x BN tile (128 or 64 each), each thread an
//   (BM/16) x (BN/16) register tile; a warp covers 4 x 8 threads, 8 along C's rows.
// - Each thread loads 4 consecutive floats of each operand per step, along the operand's unit
//   stride; a float4 load when the leading dimension, the pointer and the batch strides allow
//   it (16-byte aligned), four scalar loads otherwise (a view offset by one element) and at the
//   matrix edges, where the elements outside are zeros. The epilogue writes float4 when C's
//   rows are aligned.
// - The plan (gemm_plan, kernels/gemm_shape.h) takes the largest tile (128 x 128, then 128 x 64
//   or 64 x 128, the longer side first, then 64 x 64) that still gives at least two blocks per
//   multiprocessor, so smaller products fill the GPU, and whose 128 sides pad at most 1/8 more
//   than 64 would (Winograd's products have M = 64 channels: a 128-row tile would compute half
//   zeros); the launcher runs what it says.
// - blockIdx.z walks the batch and blockIdx.y the row tiles, each looping past the
//   device's grid limit (65535 on CUDA; lower on the emulator when a test asks).
// Work counted (EMBER_COUNT_WORK): 2 flops per multiply-add of every block tile (the padding
// included), the elements loaded and stored (not those outside the matrices).
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/gemm_tile.cuh"
#include "kernels/cuda/ladder_v1.cuh"
#include "kernels/kernel_table.h"

#include <cstdint>
#include <stdexcept>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;
using namespace gemm_tile;

constexpr int kBM = 64, kBN = 64, kBK = 16;
constexpr int kThreadsX = 16, kThreadsY = 16;  // threadIdx.x along N, threadIdx.y along M
constexpr int kTM = kBM / kThreadsY, kTN = kBN / kThreadsX;
constexpr int kThreads = kThreadsX * kThreadsY;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    gemm_tiled_kernel(GemmShape s, const T* __restrict__ a, const T* __restrict__ b,
                      T* __restrict__ c) {
  __shared__ T as[kBK][kBM];  // A tile, stored k-major so a thread reads a column of it
  __shared__ T bs[kBK][kBN];
  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  const int64_t col0 = int64_t(blockIdx.x) * kBN, m_tiles = (s.m + kBM - 1) / kBM;

  // (batch, row tile) pairs, blockIdx.z * gridDim.y + blockIdx.y first: past the grid's
  // limit on either (max_grid_yz), a block takes several.
  const int64_t items = s.batch * m_tiles, stride = int64_t(gridDim.y) * gridDim.z;
  for (int64_t item = int64_t(blockIdx.z) * gridDim.y + blockIdx.y; item < items; item += stride) {
    const int64_t z = item / m_tiles, row0 = item % m_tiles * kBM;
    int64_t off[2];
    strided_offsets(s.batch_index, z, off);
    const T* az = a + off[0];
    const T* bz = b + off[1];
    T acc[kTM][kTN];
    for (int i = 0; i < kTM; ++i)
      for (int j = 0; j < kTN; ++j) acc[i][j] = T(0);

    for (int64_t k0 = 0; k0 < s.k; k0 += kBK) {
      // Each thread loads kBM * kBK / kThreads elements of each tile.
      for (int e = tid; e < kBM * kBK; e += kThreads) {
        const int r = e / kBK, kk = e % kBK;
        const int64_t gr = row0 + r, gk = k0 + kk;
        const bool ok = gr < s.m && gk < s.k;
        as[kk][r] = ok ? az[gr * s.a_row + gk * s.a_col] : T(0);
        if (ok) EMBER_COUNT_WORK(0, sizeof(T));
      }
      for (int e = tid; e < kBK * kBN; e += kThreads) {
        const int kk = e / kBN, cc = e % kBN;
        const int64_t gk = k0 + kk, gc = col0 + cc;
        const bool ok = gk < s.k && gc < s.n;
        bs[kk][cc] = ok ? bz[gk * s.b_row + gc * s.b_col] : T(0);
        if (ok) EMBER_COUNT_WORK(0, sizeof(T));
      }
      __syncthreads();
      for (int kk = 0; kk < kBK; ++kk) {
        T af[kTM], bf[kTN];
        // Rows ty, ty + 16, ...: neighbouring threads read neighbouring words.
        for (int i = 0; i < kTM; ++i) af[i] = as[kk][threadIdx.y + i * kThreadsY];
        for (int j = 0; j < kTN; ++j) bf[j] = bs[kk][threadIdx.x + j * kThreadsX];
        for (int i = 0; i < kTM; ++i)
          for (int j = 0; j < kTN; ++j) acc[i][j] += af[i] * bf[j];
      }
      __syncthreads();  // the tiles are overwritten by the next step
      EMBER_COUNT_WORK(2 * kBK * kTM * kTN, 0);
    }

    T* cz = c + z * s.m * s.n;
    for (int i = 0; i < kTM; ++i) {
      const int64_t r = row0 + threadIdx.y + i * kThreadsY;
      if (r >= s.m) continue;
      for (int j = 0; j < kTN; ++j) {
        const int64_t col = col0 + threadIdx.x + j * kThreadsX;
        if (col < s.n) {
          cz[r * s.n + col] = acc[i][j];
          EMBER_COUNT_WORK(0, sizeof(T));
        }
      }
    }
  }
}

// --- the float32 fast path ----------------------------------------------------------------------

// Two blocks per multiprocessor (at most 128 registers) on sm_90, where ptxas fits every
// variant without spilling; older targets spill at 128 and get the registers they ask for.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr int kFastMinBlocks = 1;
#else
constexpr int kFastMinBlocks = 2;
#endif

// 256 threads, (BM/16) x (BN/16) each; a warp is 4 x 8 threads, so its A fragments are 4 float4s
// and its B fragments 8 (128 bytes), and its float4 stores of C cover 128 bytes of each row.
template <int BM, int BN>
using FastTile = BlockTile<BM, BN, BM / 16, BN / 16, WarpAlong::cols, true>;

// One operand of the fast kernel: an R x K matrix (R = M for A, N for B) with element strides
// along R and K, one of which is 1; `vec` when float4 loads are aligned.
struct FastOperand {
  int64_t r_stride = 0, k_stride = 0;
  bool vec = false;
};

struct FastGemm {
  GemmShape s;
  FastOperand a, b;  // a: M x K, b: N x K (B read as its transpose)
  bool c_vec = false;
  int64_t m_tiles = 0;
};

// A thread's share of one operand tile (R x kTileK): 4 elements consecutive in memory, along R
// (kAlongR, the R stride is 1) or along K. The valid elements are always a prefix of the 4.
template <int R, bool kAlongR>
struct OperandLoader {
  static constexpr int kVecs = R * kTileK / 4;  // 256 for R = 128, 128 for R = 64
  const float* p = nullptr;                     // (r, k) of the next load
  int k = 0;                                    // reduction offset in the tile
  int tile_off = 0;                             // of (k, r) in a shared tile
  int r_count = 0;                              // rows in the matrix of the 4 (along K: 0 or 4)
  bool active = false;                          // kVecs threads load, the others idle
  float v[4];

  __device__ __forceinline__ void init(const float* base, int64_t r_stride, int64_t k_stride,
                                       int64_t r0, int64_t rows, int tid) {
    int r;
    if (kAlongR)
      r = 4 * (tid % (R / 4)), k = tid / (R / 4);
    else
      r = tid / 2, k = 4 * (tid % 2);
    tile_off = k * (R + kTilePad) + r;
    const int64_t gr = r0 + r, left = rows - gr;
    active = tid < kVecs;
    r_count = !active || left <= 0 ? 0 : (kAlongR && left < 4 ? int(left) : 4);
    p = base + (r_count > 0 ? gr * r_stride + k * k_stride : 0);
  }

  // Loads this thread's 4 elements of the tile whose reduction positions left are `rem` (zeros
  // outside the matrix).
  __device__ __forceinline__ void load(int64_t rem, bool vec) {
    const int64_t left = rem - k;
    int n;
    if (kAlongR)
      n = left > 0 ? r_count : 0;
    else
      n = r_count == 0 || left <= 0 ? 0 : (left < 4 ? int(left) : 4);
    EMBER_COUNT_WORK(0, n * sizeof(float));
    if (vec && n == 4) {
      const float4 x = *reinterpret_cast<const float4*>(p);
      v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
    } else {
      EMBER_TILE_UNROLL
      for (int i = 0; i < 4; ++i) v[i] = i < n ? p[i] : 0.0f;
    }
  }

  __device__ __forceinline__ void store(float* tile) const {
    if (!active) return;
    if (kAlongR) {
      *reinterpret_cast<float4*>(tile + tile_off) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      EMBER_TILE_UNROLL
      for (int i = 0; i < 4; ++i) tile[tile_off + i * (R + kTilePad)] = v[i];
    }
  }
};

// The loader of gemm_tile.cuh for a strided matrix product: A's rows and B's columns.
template <int BM, int BN, bool kAAlongM, bool kBAlongN>
struct MatrixLoader {
  OperandLoader<BM, kAAlongM> a;
  OperandLoader<BN, kBAlongN> b;
  int64_t k;               // the reduction length
  int64_t a_step, b_step;  // elements from one step to the next
  bool a_vec, b_vec;

  __device__ __forceinline__ MatrixLoader(const FastGemm& f, const float* az, const float* bz,
                                          int64_t row0, int64_t col0, int tid)
      : k(f.s.k),
        a_step(kAAlongM ? kTileK * f.a.k_stride : kTileK),
        b_step(kBAlongN ? kTileK * f.b.k_stride : kTileK),
        a_vec(f.a.vec),
        b_vec(f.b.vec) {
    a.init(az, f.a.r_stride, f.a.k_stride, row0, f.s.m, tid);
    b.init(bz, f.b.r_stride, f.b.k_stride, col0, f.s.n, tid);
  }
  __device__ __forceinline__ void load(int64_t step) {
    const int64_t rem = k - step * kTileK;
    a.load(rem, a_vec);
    b.load(rem, b_vec);
  }
  __device__ __forceinline__ void advance() {
    a.p += a_step;
    b.p += b_step;
  }
  __device__ __forceinline__ void store(float (*as)[BM + kTilePad], float (*bs)[BN + kTilePad]) {
    a.store(&as[0][0]);
    b.store(&bs[0][0]);
  }
};

// The epilogue: C's rows in float4 stores where its rows are aligned, scalars at the edges.
// (Its addresses are computed here, after the main loop, so they hold no registers during it.)
struct StoreC {
  float* c;
  int64_t z, row0, col0, m, n;
  bool vec;

  template <int TM, int TN, typename Tile>
  __device__ __forceinline__ void operator()(const float (&acc)[TM][TN],
                                             const ThreadTile<Tile>& t) const {
    float* cz = c + z * m * n;
    EMBER_TILE_UNROLL
    for (int i = 0; i < TM; ++i) {
      const int64_t row = row0 + t.row_of(i);
      if (row >= m) continue;
      EMBER_TILE_UNROLL
      for (int q = 0; q < TN / 4; ++q) {
        const int64_t col = col0 + t.col_of(4 * q);
        float* dst = cz + row * n + col;
        const float* x = &acc[i][4 * q];
        if (vec && col + 3 < n) {
          *reinterpret_cast<float4*>(dst) = make_float4(x[0], x[1], x[2], x[3]);
          EMBER_COUNT_WORK(0, 4 * sizeof(float));
        } else {
          for (int j = 0; j < 4; ++j)
            if (col + j < n) {
              dst[j] = x[j];
              EMBER_COUNT_WORK(0, sizeof(float));
            }
        }
      }
    }
  }
};

template <int BM, int BN, bool kAAlongM, bool kBAlongN>
__global__ void __launch_bounds__(FastTile<BM, BN>::kThreads, kFastMinBlocks)
    gemm_f32_kernel(FastGemm f, const float* __restrict__ a, const float* __restrict__ b,
                    float* __restrict__ c) {
  using Tile = FastTile<BM, BN>;
  using Buffers = TileBuffers<float, Tile>;
  EMBER_DYNAMIC_SHARED(Buffers, tiles);  // Note [Tiles in dynamic shared memory]
  Buffers& sm = *tiles;
  const GemmShape& s = f.s;
  const int tid = threadIdx.x;
  const ThreadTile<Tile> t(tid);
  const int64_t col0 = int64_t(blockIdx.x) * BN;

  // (batch, row tile) pairs as in gemm_tiled_kernel.
  const int64_t items = s.batch * f.m_tiles, stride = int64_t(gridDim.y) * gridDim.z;
  for (int64_t item = int64_t(blockIdx.z) * gridDim.y + blockIdx.y; item < items; item += stride) {
    const int64_t z = item / f.m_tiles, row0 = item % f.m_tiles * BM;
    int64_t off[2];
    strided_offsets(s.batch_index, z, off);
    MatrixLoader<BM, BN, kAAlongM, kBAlongN> ld(f, a + off[0], b + off[1], row0, col0, tid);
    const int64_t steps = (s.k + kTileK - 1) / kTileK;
    block_tile_gemm(sm, t, steps, ld, StoreC{c, z, row0, col0, s.m, s.n, f.c_vec});
  }
}

// Reads one operand as an R x K matrix for the fast kernel: false unless a matrix dim has unit
// stride. Size-1 dims get stride 0 (only index 0 is read), so they never block the fast path.
bool fast_operand(const void* base, int64_t rows, int64_t r_stride, int64_t k, int64_t k_stride,
                  const StridedIndex<2>& batch, int which, FastOperand& op, bool& along_r) {
  op.r_stride = rows == 1 ? 0 : r_stride;
  op.k_stride = k == 1 ? 0 : k_stride;
  if (op.r_stride != 1 && op.k_stride != 1) return false;
  along_r = op.r_stride == 1;
  bool vec =
      reinterpret_cast<uintptr_t>(base) % 16 == 0 && (along_r ? op.k_stride : op.r_stride) % 4 == 0;
  for (int d = 0; d < batch.ndim; ++d) vec = vec && batch.strides[which][d] % 4 == 0;
  op.vec = vec;
  return true;
}

template <int BM, int BN, bool kAAlongM, bool kBAlongN>
void launch_gemm_f32(const GemmPlan& p, const FastGemm& f, const float* a, const float* b, float* c,
                     gpu::Stream stream) {
  auto* kernel = &gemm_f32_kernel<BM, BN, kAAlongM, kBAlongN>;
  using Buffers = TileBuffers<float, FastTile<BM, BN>>;
  EMBER_LAUNCH(kernel, dim3(p.grid[0], p.grid[1], p.grid[2]), dim3(p.threads), sizeof(Buffers),
               stream, f, a, b, c);
}

template <int BM, int BN>
void launch_gemm_f32(const GemmPlan& p, const FastGemm& f, const float* a, const float* b, float* c,
                     gpu::Stream stream) {
  if (p.a_along_m)
    p.b_along_n ? launch_gemm_f32<BM, BN, true, true>(p, f, a, b, c, stream)
                : launch_gemm_f32<BM, BN, true, false>(p, f, a, b, c, stream);
  else
    p.b_along_n ? launch_gemm_f32<BM, BN, false, true>(p, f, a, b, c, stream)
                : launch_gemm_f32<BM, BN, false, false>(p, f, a, b, c, stream);
}

dim3 grid_of(int64_t n_tiles, int64_t m_tiles, int64_t batch) {
  const int64_t limit = max_grid_yz();
  return dim3(static_cast<unsigned>(n_tiles),
              static_cast<unsigned>(m_tiles < limit ? m_tiles : limit),
              static_cast<unsigned>(batch < limit ? batch : limit));
}

// The plan of a call, and the fast kernel's arguments when it is the fast kernel: gemm_plan and
// gemm_batched both ask here, so the plan reported is the plan that runs.
GemmPlan plan(DType t, const GemmShape& s, const void* a, const void* b, const void* c,
              FastGemm* fast) {
  if (t != DType::f32 && t != DType::f64)
    throw std::invalid_argument("gemm_batched: only float32 and float64 kernels exist");
  GemmPlan p;
  if (s.m == 0 || s.n == 0 || s.batch == 0) return p;
  FastGemm f;
  f.s = s;
  if (t == DType::f32 &&
      fast_operand(a, s.m, s.a_row, s.k, s.a_col, s.batch_index, 0, f.a, p.a_along_m) &&
      fast_operand(b, s.n, s.b_col, s.k, s.b_row, s.batch_index, 1, f.b, p.b_along_n)) {
    f.c_vec = s.n % 4 == 0 && reinterpret_cast<uintptr_t>(c) % 16 == 0;
    // The largest tile that still gives two blocks per multiprocessor and pads little.
    const int64_t want = 2 * int64_t(multiprocessors());
    auto blocks = [&](int64_t bm, int64_t bn) {
      return (s.m + bm - 1) / bm * ((s.n + bn - 1) / bn) * s.batch;
    };
    // A 128 side pads at most 1/8 more than a 64 side would (M = 64 in 128-row tiles would
    // compute as many zeros as products).
    auto pads_little = [](int64_t size, int64_t tile) {
      return tile == 64 || 8 * ((size + 127) / 128 * 128) <= 9 * ((size + 63) / 64 * 64);
    };
    auto good = [&](int64_t bm, int64_t bn) {
      return pads_little(s.m, bm) && pads_little(s.n, bn) && blocks(bm, bn) >= want;
    };
    const bool tall = s.m >= s.n;
    if (good(128, 128))
      p.bm = 128, p.bn = 128;
    else if (good(tall ? 128 : 64, tall ? 64 : 128))
      p.bm = tall ? 128 : 64, p.bn = tall ? 64 : 128;
    else if (good(tall ? 64 : 128, tall ? 128 : 64))
      p.bm = tall ? 64 : 128, p.bn = tall ? 128 : 64;
    else
      p.bm = 64, p.bn = 64;
    p.kernel = GemmKernel::f32_fast;
    p.tm = p.bm / 16, p.tn = p.bn / 16, p.threads = 256;
    p.a_vec = f.a.vec, p.b_vec = f.b.vec, p.c_vec = f.c_vec;
    f.m_tiles = (s.m + p.bm - 1) / p.bm;
    if (fast) *fast = f;
  } else {
    p.kernel = GemmKernel::tiled;
    p.bm = kBM, p.bn = kBN, p.tm = kTM, p.tn = kTN, p.threads = kThreads;
    p.a_along_m = p.b_along_n = false;
  }
  const dim3 g = grid_of((s.n + p.bn - 1) / p.bn, (s.m + p.bm - 1) / p.bm, s.batch);
  p.grid[0] = g.x, p.grid[1] = g.y, p.grid[2] = g.z;
  return p;
}

}  // namespace

GemmPlan gemm_plan(DType t, const GemmShape& s, const void* a, const void* b, const void* c) {
  return plan(t, s, a, b, c, nullptr);
}

void gemm_batched(DType t, const GemmShape& s, const void* a, const void* b, void* c,
                  gpu::Stream stream) {
  FastGemm f;
  const GemmPlan p = plan(t, s, a, b, c, &f);
  const float* af = static_cast<const float*>(a);
  const float* bf = static_cast<const float*>(b);
  float* cf = static_cast<float*>(c);
  switch (p.kernel) {
    case GemmKernel::none:
    case GemmKernel::cpu:
      return;
    case GemmKernel::f32_fast:
      if (p.bm == 128 && p.bn == 128) return launch_gemm_f32<128, 128>(p, f, af, bf, cf, stream);
      if (p.bm == 128) return launch_gemm_f32<128, 64>(p, f, af, bf, cf, stream);
      if (p.bn == 128) return launch_gemm_f32<64, 128>(p, f, af, bf, cf, stream);
      return launch_gemm_f32<64, 64>(p, f, af, bf, cf, stream);
    case GemmKernel::tiled:
      break;
  }
  const dim3 grid(p.grid[0], p.grid[1], p.grid[2]), block(kThreadsX, kThreadsY);
  if (t == DType::f32)
    EMBER_LAUNCH(gemm_tiled_kernel<float>, grid, block, 0, stream, s, af, bf, cf);
  else
    EMBER_LAUNCH(gemm_tiled_kernel<double>, grid, block, 0, stream, s,
                 static_cast<const double*>(a), static_cast<const double*>(b),
                 static_cast<double*>(c));
}

// The benchmark ladder's third GEMM rung (kernels/cuda/ladder_v1.cuh): the general kernel on
// row-major float32 operands, whatever layout the fast one would take.
void gemm_tiled_f32(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                    gpu::Stream stream) {
  if (m == 0 || n == 0) return;
  GemmShape s;
  s.m = m, s.n = n, s.k = k, s.a_row = k, s.a_col = 1, s.b_row = n, s.b_col = 1;
  EMBER_LAUNCH(gemm_tiled_kernel<float>, grid_of((n + kBN - 1) / kBN, (m + kBM - 1) / kBM, 1),
               dim3(kThreadsX, kThreadsY), 0, stream, s, a, b, c);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

// Tensor Core GEMM on the GPU backends (kernels/gemm_shape.h, "Tensor Core GEMM"):
// C = alpha * A x B + beta * C with float16 or bfloat16 operands and float32 accumulation.
//
// Two kernels, the rungs after the float32 SGEMM of kernels/cuda/gemm.cu (the third, Hopper's
// wgmma, is kernels/cuda/gemm_wgmma.cu; the plan below chooses among them):
//
// gemm_wmma_kernel, the plainest Tensor Core kernel: a 64 x 64 block tile, four warps of 32 x 32,
// each warp four nvcuda::wmma 16 x 16 x 16 accumulators. Every step of 32 along K, the block
// stages A's 64 x 32 and B's 32 x 64 tiles in shared memory by plain bounds-checked loads through
// any strides (zeros outside the matrices), then each warp loads its fragments and multiplies.
// The accumulators go through shared memory to the epilogue, which applies alpha and beta and
// rounds to C's dtype. WMMA's fragments are opaque, so the kernel never indexes them.
//
// gemm_mma_kernel, what fast half-precision GEMMs are made of (CUTLASS's sm_80 kernels, llm.c's
// matmuls): mma.sync.m16n8k16 on fragments that ldmatrix reads from shared memory, the shared
// tiles filled by a 3-stage cp.async pipeline, so the copies of steps t + 1 and t + 2 overlap the
// products of step t:
// - A block of 256 threads (8 warps, 2 x 4) computes a 128 x 128 tile of C, each warp 64 x 32:
//   4 x 4 mma tiles of 16 x 8, 64 float accumulators per thread. For small products, where 128
//   tiles would leave multiprocessors idle, a 64 x 64 tile of 4 warps (2 x 2, 32 x 32 each), and
//   for narrow ones (N <= 16) 64 x 16 of 2 warps, which wastes less on empty columns.
// - Each operand keeps in shared memory the layout it has in global memory, so that cp.async
//   copies 16-byte chunks of 8 elements along its unit stride: A's rows along K ("K-major", a
//   row-major A) or its columns along M (a column-major A); B's columns along K (a column-major
//   B) or its rows along N (row-major). ldmatrix reads the K-major layouts as they are and the
//   others with .trans, which hands each lane the fragment elements of the transposed 8 x 8
//   matrix: the four transpose combinations are four instantiations, and the mma is the same.
// - Each shared row is padded by 8 elements (16 bytes): the 8 row addresses of one ldmatrix
//   then fall in different bank groups, and every row stays 16-byte aligned.
// - Chunks past the matrix edges are zero-filled (cp.async's src-size); an operand that cp.async
//   cannot copy (no unit stride, or a base, leading dimension or batch stride that is not a
//   multiple of 8 elements) is loaded element by element into the same pipeline, so any M, N, K
//   and any layout run.
// - On sm_75 each m16n8k16 is two m16n8k8 (kernels/cuda/tensor_core.cuh) and cp.async copies at
//   once; bfloat16 needs sm_80 (the plan says so).
//
// The epilogue writes element (g + 8 (i >> 1), 2t + (i & 1)) of each 16 x 8 tile from register i
// of lane 4g + t (the PTX accumulator map), alpha * acc + beta * C, rounded once.
// Batches and row tiles: blockIdx.y and .z walk (batch item, row tile) pairs past the grid's
// limits, as gemm.cu's kernels do.
// Work counted (EMBER_COUNT_WORK): 2 flops per multiply-add of every block tile (padding
// included).
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/gemm_tc.cuh"
#include "kernels/cuda/tensor_core.cuh"
#include "kernels/kernel_table.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;
using tc::TcArgs;
using tc::for_each_item;
using tc::store_c;

// ---------------------------------------------------------------------------------------------
// WMMA
namespace wm {
constexpr int kBM = 64, kBN = 64, kBK = 32, kThreads = 128;
constexpr int kLdA = kBK + 8, kLdB = kBN + 8, kLdC = kBN + 4;  // multiples of 16 bytes
}  // namespace wm

template <typename T>
__global__ void __launch_bounds__(wm::kThreads)
    gemm_wmma_kernel(TcArgs g, const T* __restrict__ a, const T* __restrict__ b, void* c) {
  using namespace wm;
  if constexpr (tc::kHasTensorCores<T>) {
    namespace w = nvcuda::wmma;
    // wmma's loads and stores want 32-byte aligned tiles: each 16-row block and 16-column step
    // of these arrays is.
    __shared__ __align__(32) T as[kBM][kLdA];  // A's tile, [m][k]
    __shared__ __align__(32) T bs[kBK][kLdB];  // B's tile, [k][n]
    __shared__ __align__(32) float cs[kBM][kLdC];
    const GemmShape& s = g.s;
    const int tid = threadIdx.x, warp = tid / 32;
    const int wm0 = 32 * (warp / 2), wn0 = 32 * (warp % 2);
    const int64_t n0 = int64_t(blockIdx.x) * kBN;
    for_each_item(g, [&](int64_t z, int64_t tile) {
      const int64_t m0 = tile * kBM;
      int64_t off[2];
      strided_offsets(s.batch_index, z, off);
      const T* az = a + off[0];
      const T* bz = b + off[1];
      w::fragment<w::accumulator, 16, 16, 16, float> acc[2][2];
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) w::fill_fragment(acc[i][j], 0.0f);
      // Consecutive threads take consecutive elements along an operand's unit stride.
      const bool a_m_fast = s.a_row == 1 && s.a_col != 1, b_k_fast = s.b_row == 1 && s.b_col != 1;
      for (int64_t k0 = 0; k0 < s.k; k0 += kBK) {
        for (int e = tid; e < kBM * kBK; e += kThreads) {
          const int r = a_m_fast ? e % kBM : e / kBK, kk = a_m_fast ? e / kBM : e % kBK;
          const int64_t gm = m0 + r, gk = k0 + kk;
          as[r][kk] = gm < s.m && gk < s.k ? az[gm * s.a_row + gk * s.a_col] : T(0.0f);
        }
        for (int e = tid; e < kBK * kBN; e += kThreads) {
          const int kk = b_k_fast ? e % kBK : e / kBN, cc = b_k_fast ? e / kBK : e % kBN;
          const int64_t gk = k0 + kk, gn = n0 + cc;
          bs[kk][cc] = gk < s.k && gn < s.n ? bz[gk * s.b_row + gn * s.b_col] : T(0.0f);
        }
        __syncthreads();
        for (int kk = 0; kk < kBK; kk += 16) {
          w::fragment<w::matrix_a, 16, 16, 16, T, w::row_major> fa[2];
          w::fragment<w::matrix_b, 16, 16, 16, T, w::row_major> fb[2];
          for (int i = 0; i < 2; ++i) w::load_matrix_sync(fa[i], &as[wm0 + 16 * i][kk], kLdA);
          for (int j = 0; j < 2; ++j) w::load_matrix_sync(fb[j], &bs[kk][wn0 + 16 * j], kLdB);
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) w::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();  // the tiles are overwritten by the next step
        EMBER_COUNT_WORK(2 * kBM * kBN * kBK / kThreads, 0);
      }
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
          w::store_matrix_sync(&cs[wm0 + 16 * i][wn0 + 16 * j], acc[i][j], kLdC, w::mem_row_major);
      __syncthreads();
      for (int e = tid; e < kBM * kBN; e += kThreads) {
        const int r = e / kBN, cc = e % kBN;
        const int64_t gm = m0 + r, gn = n0 + cc;
        if (gm < s.m && gn < s.n) store_c(g, c, (z * s.m + gm) * s.n + gn, cs[r][cc]);
      }
      __syncthreads();  // cs is rewritten by the next item
    });
  }
}

// ---------------------------------------------------------------------------------------------
// mma.sync + ldmatrix + cp.async (the block tile of kernels/cuda/gemm_tc.cuh)

// One batch item's product as a problem of tc::mma_block_tile.
template <typename T>
struct GemmProblem {
  int64_t m, n, k;
  const TcArgs* g;
  const T* a;
  const T* b;
  void* c;
  int64_t c_offset;  // of the item's C

  template <typename Tile, bool KMajor>
  __device__ void stage_a(T* dst, int64_t m0, int64_t k0) const {
    tc::stage_strided<Tile, Tile::kBM, KMajor>(dst, a, m, k, g->s.a_row, g->s.a_col, m0, k0,
                                               g->a_async);
  }
  template <typename Tile, bool KMajor>
  __device__ void stage_b(T* dst, int64_t n0, int64_t k0) const {
    tc::stage_strided<Tile, Tile::kBN, KMajor>(dst, b, n, k, g->s.b_col, g->s.b_row, n0, k0,
                                               g->b_async);
  }
  __device__ void store(int64_t i, int64_t j, float v) const {
    store_c(*g, c, c_offset + i * n + j, v);
  }
};

template <typename Tile, bool AK, bool BK, typename T>
__global__ void __launch_bounds__(Tile::kThreads)
    gemm_mma_kernel(TcArgs g, const T* __restrict__ a, const T* __restrict__ b, void* c) {
  if constexpr (tc::kHasTensorCores<T>) {
    EMBER_DYNAMIC_SHARED(T, smem);
    const GemmShape& s = g.s;
    for_each_item(g, [&](int64_t z, int64_t tile) {
      int64_t off[2];
      strided_offsets(s.batch_index, z, off);
      const GemmProblem<T> pr{s.m, s.n, s.k, &g, a + off[0], b + off[1], c, z * s.m * s.n};
      tc::mma_block_tile<Tile, AK, BK>(pr, smem, tile * Tile::kBM, int64_t(blockIdx.x) * Tile::kBN);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Plans and launches

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Whether cp.async can copy an operand in chunks of 8 along its dim `unit` (stride 1): its base
// 16-byte aligned, its other stride and every batch stride multiples of 8 elements (a stride
// along a dim of size 1 is never used).
bool async_ok(const void* base, int64_t other_size, int64_t other_stride, const StridedIndex<2>& bi,
              int operand) {
  if (!aligned16(base) || (other_size > 1 && other_stride % 8 != 0)) return false;
  for (int d = 0; d < bi.ndim; ++d)
    if (bi.sizes[d] > 1 && bi.strides[operand][d] % 8 != 0) return false;
  return true;
}

TcGemmPlan plan(const TcGemm& g, const void* a, const void* b, TcArgs* args) {
  TcGemmPlan p;
  const GemmShape& s = g.shape;
  if (g.in != DType::f16 && g.in != DType::bf16) {
    p.why = "gemm_tc: expected float16 or bfloat16 operands";
    return p;
  }
  if (g.out != DType::f32 && g.out != DType::f16 && g.out != DType::bf16) {
    p.why = "gemm_tc: expected a float32, float16 or bfloat16 result";
    return p;
  }
  if (g.kernel == TcKernel::cpu) {
    p.why = "gemm_tc: the `cpu` kernel runs on the cpu only";
    return p;
  }
  if (g.in == DType::bf16 && compute_capability() < 80) {
    p.why = "gemm_tc: bfloat16 Tensor Cores need sm_80 or newer; this GPU has none (use float16)";
    return p;
  }
  if (g.kernel == TcKernel::wgmma) {
    if (!tc::wgmma_built()) {
      p.why = EMBER_EMULATED ? "gemm_tc: wgmma is GPU-only (the emulator has no wgmma; it runs "
                               "mma_sync)"
                             : "gemm_tc: this build has no sm_90a code for wgmma (its CUDA "
                               "architectures do not include 90)";
      return p;
    }
    if (compute_capability() != 90) {
      p.why = "gemm_tc: wgmma needs an sm_90 GPU (sm_90a code runs on compute capability 9.0 "
              "only); use mma_sync";
      return p;
    }
    if (max_shared_optin() < tc::WgmmaTile::kSharedBytes) {
      p.why = "gemm_tc: wgmma's 96 KiB of shared memory per block exceed this GPU's limit";
      return p;
    }
  }
  p.supported = true;
  p.kernel = g.kernel == TcKernel::automatic ? TcKernel::mma_sync : g.kernel;
  if (s.m == 0 || s.n == 0 || s.batch == 0) return p;  // nothing to run: the grid stays empty
  // A unit stride along K keeps the K-major shared layout (also the layout of plain loads).
  p.a_k_major = !(s.a_row == 1 && s.a_col != 1 && s.m > 1);
  p.b_k_major = s.b_row == 1 && s.b_col != 1 && s.n > 1;
  if (p.kernel == TcKernel::wmma) {
    p.bm = p.bn = wm::kBM, p.bk = wm::kBK, p.stages = 1, p.threads = wm::kThreads;
  } else if (p.kernel == TcKernel::wgmma) {
    using W = tc::WgmmaTile;
    p.bm = W::kBM, p.bn = W::kBN, p.bk = W::kBK, p.stages = W::kStages, p.threads = W::kThreads;
  } else {
    const bool big =
        s.n > 16 && tc::big_tile(s.m, s.n, s.batch,
                                 tc::MmaTile<128>::shared_bytes(p.a_k_major, p.b_k_major, 2));
    p.bm = big ? 128 : 64, p.bn = big ? 128 : s.n <= 16 ? 16 : 64;
    p.bk = tc::MmaTile<128>::kBK, p.stages = tc::MmaTile<128>::kStages;
    p.threads = big          ? tc::MmaTile<128>::kThreads
                : p.bn == 16 ? tc::MmaTile<64, 16>::kThreads
                             : tc::MmaTile<64>::kThreads;
  }
  if (p.kernel != TcKernel::wmma) {  // which operands cp.async copies
    const bool a_unit = p.a_k_major ? s.a_col == 1 || s.k == 1 : true;
    const bool b_unit = p.b_k_major ? s.b_row == 1 || s.k == 1 : s.b_col == 1 || s.n == 1;
    p.a_async = a_unit && async_ok(a, p.a_k_major ? s.m : s.k, p.a_k_major ? s.a_row : s.a_col,
                                   s.batch_index, 0);
    p.b_async = b_unit && async_ok(b, p.b_k_major ? s.n : s.k, p.b_k_major ? s.b_col : s.b_row,
                                   s.batch_index, 1);
  }
  const int64_t m_tiles = (s.m + p.bm - 1) / p.bm, limit = max_grid_yz();
  const int64_t items = s.batch * m_tiles;
  p.grid[0] = static_cast<unsigned>((s.n + p.bn - 1) / p.bn);
  p.grid[1] = static_cast<unsigned>(m_tiles < limit ? m_tiles : limit);
  p.grid[2] = static_cast<unsigned>(
      (items + p.grid[1] - 1) / p.grid[1] < limit ? (items + p.grid[1] - 1) / p.grid[1] : limit);
  if (args) {
    args->s = s, args->alpha = g.alpha, args->beta = g.beta, args->out = g.out;
    args->a_async = p.a_async, args->b_async = p.b_async, args->m_tiles = m_tiles;
  }
  return p;
}

template <int BM, int BN, bool AK, bool BK, typename T>
void launch_mma(const TcGemmPlan& p, const TcArgs& args, const T* a, const T* b, void* c,
                gpu::Stream stream) {
  using Tile = tc::MmaTile<BM, BN>;
  const size_t bytes = Tile::shared_bytes(AK, BK, sizeof(T));
  auto* kernel = gemm_mma_kernel<Tile, AK, BK, T>;
  if (bytes > 48 * 1024) EMBER_SET_MAX_DYNAMIC_SHARED(kernel, bytes);
  EMBER_LAUNCH(kernel, dim3(p.grid[0], p.grid[1], p.grid[2]), dim3(Tile::kThreads), bytes, stream,
               args, a, b, c);
}

template <int BM, int BN, typename T>
void launch_mma_layout(const TcGemmPlan& p, const TcArgs& args, const T* a, const T* b, void* c,
                       gpu::Stream stream) {
  if (p.a_k_major)
    p.b_k_major ? launch_mma<BM, BN, true, true>(p, args, a, b, c, stream)
                : launch_mma<BM, BN, true, false>(p, args, a, b, c, stream);
  else
    p.b_k_major ? launch_mma<BM, BN, false, true>(p, args, a, b, c, stream)
                : launch_mma<BM, BN, false, false>(p, args, a, b, c, stream);
}

template <typename T>
void launch(const TcGemmPlan& p, const TcArgs& args, const void* a, const void* b, void* c,
            gpu::Stream stream) {
  const T* at = static_cast<const T*>(a);
  const T* bt = static_cast<const T*>(b);
  if (p.kernel == TcKernel::wgmma)
    tc::gemm_wgmma(p, args, std::is_same_v<T, __half> ? DType::f16 : DType::bf16, a, b, c, stream);
  else if (p.kernel == TcKernel::wmma)
    EMBER_LAUNCH(gemm_wmma_kernel<T>, dim3(p.grid[0], p.grid[1], p.grid[2]), dim3(wm::kThreads), 0,
                 stream, args, at, bt, c);
  else if (p.bm == 128)
    launch_mma_layout<128, 128>(p, args, at, bt, c, stream);
  else if (p.bn == 16)
    launch_mma_layout<64, 16>(p, args, at, bt, c, stream);
  else
    launch_mma_layout<64, 64>(p, args, at, bt, c, stream);
}

}  // namespace

TcGemmPlan gemm_tc_plan(const TcGemm& g, const void* a, const void* b, const void*) {
  return plan(g, a, b, nullptr);
}

void gemm_tc_batched(const TcGemm& g, const void* a, const void* b, void* c, gpu::Stream stream) {
  TcArgs args;
  const TcGemmPlan p = plan(g, a, b, &args);
  if (!p.supported) throw std::invalid_argument(p.why);
  if (p.grid[0] == 0 || p.grid[1] == 0 || p.grid[2] == 0) return;
  if (g.in == DType::f16)
    launch<__half>(p, args, a, b, c, stream);
  else
    launch<__nv_bfloat16>(p, args, a, b, c, stream);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

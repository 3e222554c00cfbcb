// The plain parameters of the batched matrix product C[b] = A[b] x B[b], shared by the CPU
// kernel (Eigen), the GPU kernels, cuBLAS and ops/matmul.
#pragma once

#include <cstdint>

#include "kernels/elementwise_shape.h"
#include "runtime/dtype.h"

namespace ember::kernels {

// A[b]: m x k, B[b]: k x n, with row/column strides in elements; C contiguous [batch, m, n].
// The batch index runs row-major over batch_index.sizes, and batch_index.strides[0] / [1] give
// A's / B's offset along each batch dim (0 repeats the operand: broadcasting).
// The kernel: gemm_batched(t, shape, a, b, c, stream).
// requires: t float32 or float64; C not aliasing A or B; any m, n, k >= 0.
// ensures:  C written in full (zeros when k == 0), accumulating in t.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t a_row = 0, a_col = 0, b_row = 0, b_col = 0;
  int64_t batch = 1;
  StridedIndex<2> batch_index;
};

// Which kernel computes a product, and with what tile: what the table's gemm_plan answers, from
// the rules its gemm_batched runs by (kernels/cuda/gemm.cu says why they are what they are).
enum class GemmKernel : uint8_t {
  none,      // nothing to compute: m, n or batch is 0
  cpu,       // the cpu's Eigen product (no tiles of its own to report)
  tiled,     // the general GPU kernel: float64, or an operand with no unit matrix stride
  f32_fast,  // the float32 SGEMM: operands with a unit stride along one matrix dim each
};

// "none", "cpu", "tiled", "f32_fast".
inline const char* gemm_kernel_name(GemmKernel k) {
  const char* names[] = {"none", "cpu", "tiled", "f32_fast"};
  return names[static_cast<int>(k)];
}

// gemm_plan(t, shape, a, b, c): the plan gemm_batched(t, shape, a, b, c, stream) follows on the
// same device (the pointers are read for their alignment only).
// ensures: kernel says which; on the GPU kernels, a block of `threads` computes a bm x bn tile
//          of C with tm x tn per thread, over grid[0] column tiles x grid[1] row tiles x grid[2]
//          batch items (the last two capped at the grid limit, looping); for f32_fast,
//          a_along_m when A's unit stride is along M (A stored transposed; else along K),
//          b_along_n when B's is along N (B row-major; else along K), the way each thread's 4
//          elements per step run, and a_vec / b_vec / c_vec when A / B are read and C written
//          in 16-byte vectors.
// throws: std::invalid_argument (GPU) or DTypeError (cpu) for a dtype other than f32, f64.
struct GemmPlan {
  GemmKernel kernel = GemmKernel::none;
  int bm = 0, bn = 0, tm = 0, tn = 0, threads = 0;
  unsigned grid[3] = {0, 0, 0};
  bool a_along_m = false, b_along_n = false;
  bool a_vec = false, b_vec = false, c_vec = false;
};

// --- Tensor Core GEMM ---------------------------------------------------------------------
// C[b] = alpha * A[b] x B[b] + beta * C[b]: A and B float16 or bfloat16 (the same dtype), read
// through `shape`'s strides (so any transposition), products accumulated in float32, C float32,
// float16 or bfloat16, contiguous [batch, m, n], rounded to nearest even once. beta == 0 does
// not read C (it may hold NaN), as BLAS. The kernels (kernels/cuda/gemm_tc.cu):
//   wmma      nvcuda::wmma m16n16k16 tiles of a 64 x 64 block tile staged through shared memory
//             by plain loads; any layout;
//   mma_sync  mma.sync m16n8k16 (two m16n8k8 on sm_75) fed by ldmatrix from a 3-stage cp.async
//             pipeline when each operand has a unit stride along one matrix dim, 16-byte aligned
//             (base, leading dimension and batch strides multiples of 8 elements); otherwise the
//             same pipeline filled by plain loads;
//   cpu       the cpu's: the float32 product of widened copies (Eigen), then alpha, beta and the
//             rounding of the others;
//   wgmma     (kernels/cuda/gemm_wgmma.cu) wgmma.mma_async m64n128k16 of two warpgroups reading
//             both operands from shared memory through matrix descriptors, the stages filled by
//             the same 3-stage cp.async pipeline (plain loads where it cannot copy), 128 x 128
//             block tiles; sm_90a code, so on sm_90 GPUs only (never the emulator), and chosen
//             by name only.
// The entries: gemm_tc_batched(g, a, b, c, stream) runs gemm_tc_plan(g, a, b, c).
// requires: g.in f16 or bf16, g.out f32, f16 or bf16; C not aliasing A or B; the kernel asked
//           for (g.kernel) supported where it runs (gemm_tc_plan says; bf16 needs sm_80).
// throws:   std::invalid_argument (GPU) or DTypeError (cpu) otherwise, with plan.why.
enum class TcKernel : uint8_t { automatic, wmma, mma_sync, cpu, wgmma };

// "auto", "wmma", "mma_sync", "cpu", "wgmma".
inline const char* tc_kernel_name(TcKernel k) {
  const char* names[] = {"auto", "wmma", "mma_sync", "cpu", "wgmma"};
  return names[static_cast<int>(k)];
}

struct TcGemm {
  GemmShape shape;
  DType in = DType::f16, out = DType::f32;
  float alpha = 1.0f, beta = 0.0f;
  TcKernel kernel = TcKernel::automatic;  // what to run; automatic: the plan picks
};

// What gemm_tc_batched runs: `kernel` (never automatic) with a bm x bn block tile of `threads`
// threads over `grid` (as GemmPlan's), `stages` shared-memory stages of bk, and for mma_sync
// which operand layouts the shared tiles keep (a_k_major: A's rows along K, as row-major A;
// b_k_major: B's columns along K, as column-major B) and which operands cp.async copies
// (a_async, b_async; the others are staged by plain loads). supported == false: nothing runs, `why`
// says what is missing. An empty product (m, n or batch 0) is supported with an empty grid.
struct TcGemmPlan {
  bool supported = false;
  const char* why = "";
  TcKernel kernel = TcKernel::automatic;
  int bm = 0, bn = 0, bk = 0, stages = 0, threads = 0;
  unsigned grid[3] = {0, 0, 0};
  bool a_k_major = false, b_k_major = false, a_async = false, b_async = false;
};

}  // namespace ember::kernels

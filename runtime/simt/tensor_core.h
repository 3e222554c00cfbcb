// The Tensor Core instructions for kernels under the SIMT emulator: mma.sync (m16n8k16 and
// m16n8k8, f16 or bf16 inputs, f32 accumulators), ldmatrix (m8n8 b16, x1/x2/x4, .trans) and
// cp.async (16 bytes, shared from global, commit and wait groups). Kernels reach them through
// kernels/cuda/tensor_core.cuh, which names the same operations under nvcc as inline PTX.
//
// Registers hold what the PTX ISA says they hold, lane by lane ("Matrix Fragments for
// mma.m16n8k8" and "... mma.m16n8k16 with floating point type"; "Warp-level matrix load
// instruction: ldmatrix"), because kernels index fragments in their epilogues:
//   g = lane >> 2, t = lane & 3; element i of a fragment is half i & 1 (low half first) of
//   register i >> 1.
//   A (16 x K, row-major): row g + 8 * ((i >> 1) & 1), column 2t + (i & 1) + 8 * (i >> 2).
//   B (K x 8, column-major): row (k) 2t + (i & 1) + 8 * (i >> 1), column (n) g.
//   C and D (16 x 8, f32, one element per register): row g + 8 * (i >> 1), column 2t + (i & 1).
//   ldmatrix: lanes 8m..8m+7 give the row addresses of matrix m; register m of lane l holds
//   row l >> 2, columns 2t and 2t + 1 of matrix m (.trans: rows 2t and 2t + 1 of column l >> 2).
//
// mma.sync and ldmatrix are warp collectives: every lane of a full warp reaches the same call,
// or the launch ends with a report naming the line. The products of 16-bit inputs are exact in
// float32 and the sums are float32, in k order.
//
// requires (for every function here): called from a kernel running under simt::run_launch;
// `file` and `line` name the call site for reports.
#pragma once

#include <cstdint>

namespace ember::simt {

enum class MmaInput { F16, BF16 };

// D = A * B + C for one 16 x 8 tile with k = 16 (a: 4 registers, b: 2) or k = 8 (a: 2, b: 1).
// d may be c.
void mma_m16n8k16(MmaInput in, float* d, const uint32_t* a, const uint32_t* b, const float* c,
                  const char* file, int line);
void mma_m16n8k8(MmaInput in, float* d, const uint32_t* a, const uint32_t* b, const float* c,
                 const char* file, int line);

// Loads `matrices` (1, 2 or 4) 8 x 8 matrices of 16-bit elements into r[0..matrices).
// requires: every lane's `row` is 16-byte aligned and in the block's shared memory (static or
// dynamic), even for lanes whose row .x1 and .x2 do not read (sm_75 requires it); the rows read
// are not the destination of a pending cp.async.
void ldmatrix(int matrices, bool trans, uint32_t* r, const void* row, const char* file, int line);

// cp.async.cg.shared.global: copies 16 bytes, the first `src_bytes` from `src` and zeros after
// (src is not read when src_bytes is 0). dst reads as 0xFF bytes until the calling thread waits
// for the copy's group (Note [Pending cp.async] in runtime/simt/async_copy.h).
// requires: dst 16-byte aligned in shared memory, src 16-byte aligned outside it,
// 0 <= src_bytes <= 16.
void cp_async_16(void* dst, const void* src, int src_bytes, const char* file, int line);
// cp.async.commit_group: the calling thread's copies since its last commit form a group.
void cp_async_commit();
// cp.async.wait_group n: the calling thread's committed groups, all but the newest n, complete.
void cp_async_wait(int n);

}  // namespace ember::simt

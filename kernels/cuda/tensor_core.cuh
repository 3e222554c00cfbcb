// The Tensor Core instructions for kernel files: mma.sync, ldmatrix and cp.async. Under nvcc
// each is one inline PTX instruction; under g++ it is the SIMT emulator's version
// (runtime/simt/tensor_core.h), which gives every lane the same registers a GPU does and
// reports what a GPU leaves undefined (divergent or partial warps, ldmatrix rows that are
// misaligned, outside shared memory or not yet landed by a cp.async). Included by .cu files
// after kernels/cuda/compat.h.
//
// Fragments, as the PTX ISA lays them out ("Matrix Fragments for mma.m16n8k16 with floating
// point type", "... for mma.m16n8k8"), with g = lane >> 2 and t = lane & 3; element i of a
// fragment sits in half i & 1 (low half first) of register i >> 1:
//   A, 16 x 16 row-major, a[4]:   row g + 8 * ((i >> 1) & 1), column 2t + (i & 1) + 8 * (i >> 2)
//   B, 16 x 8 column-major, b[2]: row (k) 2t + (i & 1) + 8 * (i >> 1), column (n) g
//   C and D, 16 x 8 float, c[4] and d[4]: row g + 8 * (i >> 1), column 2t + (i & 1)
//   m16n8k8: a[2] and b[1], the first eight columns of A and rows of B of the above.
// ldmatrix: lanes 8m..8m+7 give the addresses of rows 0..7 of matrix m; register m of lane l
// holds row g, columns 2t and 2t + 1 of matrix m (.trans: rows 2t and 2t + 1 of column g). So,
// for a row-major 16 x 16 A tile in shared memory, ldmatrix_x4 with lane l at
// &A[l % 16][8 * (l / 16)] yields a[0..3]; for a row-major (k-major) 16 x 8 B tile,
// ldmatrix_x2_trans with lane l at &B[l % 16][0] yields b[0..1]. Every lane's address must be
// valid (sm_75 requires it even of the lanes .x1 and .x2 do not read).
//
// Architectures (the build compiles sm_75, sm_80 and sm_90):
//   mma m16n8k8 f16: sm_75+; m16n8k16 f16: sm_80+, two m16n8k8 on sm_75;
//   bf16 (both shapes): sm_80+; sm_75 has no bf16 Tensor Cores and traps.
//   ldmatrix: sm_75+.
//   cp.async: sm_80+; sm_75 copies at once, and commit and wait do nothing.
//   wgmma (warpgroup MMA, its fences and matrix descriptors): sm_90a only, never emulated.
// Every function is a warp collective except the cp.async ones, which are per thread (and
// wgmma's, which are warpgroup collectives).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/compat.h"

#if !EMBER_EMULATED

// The device architecture nvcc is compiling (0 in its host pass, which makes no device code).
#if defined(__CUDA_ARCH__)
#define EMBER_TC_ARCH __CUDA_ARCH__
#else
#define EMBER_TC_ARCH 0
#endif

namespace ember::kernels::EMBER_KERNEL_NS {

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// --- mma.sync: D = A * B + C, f32 accumulators (d may be c) -----------------------------------
__device__ __forceinline__ void mma_m16n8k8_f16(float (&d)[4], const uint32_t (&a)[2],
                                                const uint32_t (&b)[1], const float (&c)[4]) {
#if EMBER_TC_ARCH >= 750
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
  __trap();
#endif
}

__device__ __forceinline__ void mma_m16n8k8_bf16(float (&d)[4], const uint32_t (&a)[2],
                                                 const uint32_t (&b)[1], const float (&c)[4]) {
#if EMBER_TC_ARCH >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
  __trap();
#endif
}

__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const uint32_t (&a)[4],
                                                 const uint32_t (&b)[2], const float (&c)[4]) {
#if EMBER_TC_ARCH >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
#else
  // Columns 0-7 of A are a[0..1] and rows 0-7 of B are b[0], as m16n8k8 wants them; then 8-15.
  const uint32_t a_lo[2] = {a[0], a[1]}, a_hi[2] = {a[2], a[3]};
  const uint32_t b_lo[1] = {b[0]}, b_hi[1] = {b[1]};
  mma_m16n8k8_f16(d, a_lo, b_lo, c);
  mma_m16n8k8_f16(d, a_hi, b_hi, d);
#endif
}

__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4],
                                                  const uint32_t (&b)[2], const float (&c)[4]) {
#if EMBER_TC_ARCH >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
#else
  __trap();
#endif
}

// --- ldmatrix.sync.aligned.m8n8{.x1,.x2,.x4}{.trans}.shared.b16 ------------------------------
// `smem_row` is this lane's row address (16 bytes, 16-byte aligned, in shared memory).
__device__ __forceinline__ void ldmatrix_x1(uint32_t (&r)[1], const void* smem_row) {
#if EMBER_TC_ARCH >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(shared_address(smem_row))
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* smem_row) {
#if EMBER_TC_ARCH >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(smem_row))
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row) {
#if EMBER_TC_ARCH >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(smem_row))
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void ldmatrix_x1_trans(uint32_t (&r)[1], const void* smem_row) {
#if EMBER_TC_ARCH >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(shared_address(smem_row))
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void* smem_row) {
#if EMBER_TC_ARCH >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(smem_row))
               : "memory");
#else
  __trap();
#endif
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem_row) {
#if EMBER_TC_ARCH >= 750
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(smem_row))
               : "memory");
#else
  __trap();
#endif
}

// --- cp.async.cg.shared.global, 16 bytes, and its groups ---------------------------------------
// smem_dst and gmem_src 16-byte aligned. The data may land any time before the cp_async_wait
// that covers its group returns; read it only after that wait and a __syncthreads().
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src) {
#if EMBER_TC_ARCH >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
               :
               : "r"(shared_address(smem_dst)), "l"(__cvta_generic_to_global(gmem_src))
               : "memory");
#else
  *static_cast<uint4*>(smem_dst) = *static_cast<const uint4*>(gmem_src);
#endif
}

// The first src_bytes (0..16) from gmem_src, zeros after: the edge of a tile (gmem_src is not
// read when src_bytes is 0, but must still be a valid address).
__device__ __forceinline__ void cp_async_16_zfill(void* smem_dst, const void* gmem_src,
                                                  int src_bytes) {
#if EMBER_TC_ARCH >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :
               : "r"(shared_address(smem_dst)), "l"(__cvta_generic_to_global(gmem_src)),
                 "r"(src_bytes)
               : "memory");
#else
  unsigned char* dst = static_cast<unsigned char*>(smem_dst);
  const unsigned char* src = static_cast<const unsigned char*>(gmem_src);
  for (int i = 0; i < 16; ++i) dst[i] = i < src_bytes ? src[i] : 0;
#endif
}

// cp.async.commit_group: this thread's copies since its last commit form one group.
__device__ __forceinline__ void cp_async_commit() {
#if EMBER_TC_ARCH >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// cp.async.wait_group N: waits until at most the newest N committed groups of this thread are
// still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  static_assert(N >= 0, "cp.async.wait_group takes a non-negative count");
#if EMBER_TC_ARCH >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// cp.async.wait_all: commits the open group and waits for every group of this thread.
__device__ __forceinline__ void cp_async_wait_all() {
#if EMBER_TC_ARCH >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// --- wgmma: sm_90a only, no emulator version -----------------------------------------------
// Hopper's warpgroup MMA (kernels/cuda/gemm_wgmma.cu says how it is used). These exist only in
// nvcc's sm_90a device pass, where EMBER_HAS_WGMMA is 1; a kernel uses them under
// `#if EMBER_HAS_WGMMA` and is empty elsewhere, so the emulator (which does not emulate
// descriptors, the async proxy or warpgroups) never runs one: its plan refuses it.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define EMBER_HAS_WGMMA 1

// The matrix descriptor of a tile at `smem`: its shared address, LBO and SBO (bytes), all in
// units of 16 bytes; base offset 0 and no swizzle (bits 62-63 zero).
__device__ __forceinline__ uint64_t wgmma_desc(const void* smem, uint32_t lbo, uint32_t sbo) {
  const uint64_t addr = shared_address(smem);
  return ((addr & 0x3FFFF) >> 4) | (uint64_t((lbo & 0x3FFFF) >> 4) << 16) |
         (uint64_t((sbo & 0x3FFFF) >> 4) << 32);
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Orders this thread's generic-proxy writes to shared memory (cp.async's included, once waited
// for) before later async-proxy reads of it (wgmma's).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving reads or writes of v across the point where it is named (the
// accumulators belong to the Tensor Cores between an mma_async and its wait).
__device__ __forceinline__ void fence_operand(float& v) {
  asm volatile("" : "+f"(v)::"memory");
}

#define EMBER_WGMMA_D8(i)                                                                      \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define EMBER_WGMMA_M64N128K16(type)                                                            \
  asm volatile(                                                                                 \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                              \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." type "." type " "                          \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "  \
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "   \
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "    \
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                                 \
      "%64, %65, p, 1, 1, %67, %68;\n}\n"                                                       \
      : EMBER_WGMMA_D8(0), EMBER_WGMMA_D8(8), EMBER_WGMMA_D8(16), EMBER_WGMMA_D8(24),           \
        EMBER_WGMMA_D8(32), EMBER_WGMMA_D8(40), EMBER_WGMMA_D8(48), EMBER_WGMMA_D8(56)          \
      : "l"(da), "l"(db), "r"(1), "n"(TransA ? 1 : 0), "n"(TransB ? 1 : 0))

// d += A (64 x 16, descriptor da) x B (16 x 128, descriptor db), issued by the whole warpgroup;
// TransA / TransB: the operand is MN-major.
template <bool TransA, bool TransB, typename T>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t da, uint64_t db) {
  if constexpr (std::is_same_v<T, __half>)
    EMBER_WGMMA_M64N128K16("f16");
  else
    EMBER_WGMMA_M64N128K16("bf16");
}
#undef EMBER_WGMMA_M64N128K16
#undef EMBER_WGMMA_D8
#else
#define EMBER_HAS_WGMMA 0
#endif

}  // namespace ember::kernels::EMBER_KERNEL_NS

#undef EMBER_TC_ARCH

#else  // the SIMT emulator: the same functions, each passing its call site to the reports

#define EMBER_HAS_WGMMA 0  // wgmma has no emulator version (above)

namespace ember::kernels::EMBER_KERNEL_NS {

inline void mma_m16n8k8_f16(float (&d)[4], const uint32_t (&a)[2], const uint32_t (&b)[1],
                            const float (&c)[4], const char* file = __builtin_FILE(),
                            int line = __builtin_LINE()) {
  ::ember::simt::mma_m16n8k8(::ember::simt::MmaInput::F16, d, a, b, c, file, line);
}
inline void mma_m16n8k8_bf16(float (&d)[4], const uint32_t (&a)[2], const uint32_t (&b)[1],
                             const float (&c)[4], const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  ::ember::simt::mma_m16n8k8(::ember::simt::MmaInput::BF16, d, a, b, c, file, line);
}
inline void mma_m16n8k16_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                             const float (&c)[4], const char* file = __builtin_FILE(),
                             int line = __builtin_LINE()) {
  ::ember::simt::mma_m16n8k16(::ember::simt::MmaInput::F16, d, a, b, c, file, line);
}
inline void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                              const float (&c)[4], const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  ::ember::simt::mma_m16n8k16(::ember::simt::MmaInput::BF16, d, a, b, c, file, line);
}

inline void ldmatrix_x1(uint32_t (&r)[1], const void* smem_row, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  ::ember::simt::ldmatrix(1, false, r, smem_row, file, line);
}
inline void ldmatrix_x2(uint32_t (&r)[2], const void* smem_row, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  ::ember::simt::ldmatrix(2, false, r, smem_row, file, line);
}
inline void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  ::ember::simt::ldmatrix(4, false, r, smem_row, file, line);
}
inline void ldmatrix_x1_trans(uint32_t (&r)[1], const void* smem_row,
                              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::ember::simt::ldmatrix(1, true, r, smem_row, file, line);
}
inline void ldmatrix_x2_trans(uint32_t (&r)[2], const void* smem_row,
                              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::ember::simt::ldmatrix(2, true, r, smem_row, file, line);
}
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem_row,
                              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::ember::simt::ldmatrix(4, true, r, smem_row, file, line);
}

inline void cp_async_16(void* smem_dst, const void* gmem_src, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  ::ember::simt::cp_async_16(smem_dst, gmem_src, 16, file, line);
}
inline void cp_async_16_zfill(void* smem_dst, const void* gmem_src, int src_bytes,
                              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::ember::simt::cp_async_16(smem_dst, gmem_src, src_bytes, file, line);
}
inline void cp_async_commit() {
  ::ember::simt::cp_async_commit();
}
template <int N>
inline void cp_async_wait() {
  static_assert(N >= 0, "cp.async.wait_group takes a non-negative count");
  ::ember::simt::cp_async_wait(N);
}
inline void cp_async_wait_all() {
  ::ember::simt::cp_async_commit();
  ::ember::simt::cp_async_wait(0);
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

#endif

// The only header a kernel file (kernels/cuda/*.cu) includes: one kernel source, two compilers.
//
// Under nvcc it brings the CUDA headers; under g++ it brings the SIMT emulator (runtime/simt),
// which runs the same source on the CPU as the `emu` device. It defines:
//   EMBER_KERNEL_NS      `cuda` under nvcc, `emu` under g++: put a file's kernels and launchers
//                        in ember::kernels::EMBER_KERNEL_NS so both copies link into one library.
//   EMBER_LAUNCH(kernel, grid, block, shared_bytes, stream, args...)
//                        the only way to launch (no <<<>>> in kernel files). Throws CudaError when
//                        the launch fails. A template kernel with several template arguments is
//                        launched through a pointer: `auto* k = &tile_kernel<16, 8>;`.
//   EMBER_DYNAMIC_SHARED(T, name)   declares `T* name` pointing at the dynamic shared memory.
//   EMBER_SET_MAX_DYNAMIC_SHARED(kernel, bytes)   opts a kernel in to more than 48 KiB of it.
//   EMBER_EMULATED       1 under g++, 0 under nvcc (guard for code with no emulator fallback).
//   EMBER_COUNT_WORK(flops, bytes)  reports a thread's work to the emulator's counters
//                        (runtime/simt/work_count.h); nothing under nvcc (the arguments
//                        unevaluated).
// It also brings runtime/philox.h, the counter-based generator the CPU shares with the kernels.
// Rules for kernel files: docs/emulator.md.
//
// Note [Tiles in dynamic shared memory]: under the emulator a `__shared__` array is a
// `static thread_local`, so every kernel instantiation's arrays sit in the library's
// thread-local block, which the C library allocates and zeroes for each thread of the process
// that touches any of the library's thread-local variables (the grad mode, the current stream),
// cpu work included. The tile GEMMs' buffers (gemm_f32_kernel, the implicit-GEMM convolution's
// two kernels: 17-42 KiB per instantiation, about 80 of them), the fused Winograd kernel's and
// the sort's tiles made that block 1.42 MiB per thread; they use EMBER_DYNAMIC_SHARED instead,
// sized at the launch (all under 48 KiB, so no opt-in on a GPU), and the block is 0.1 MiB.
// Small arrays stay `__shared__`; a new kernel whose arrays reach kilobytes takes the dynamic
// kind. The emulator's dynamic shared memory also starts each block as NaN poison.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/gpu.h"
#include "runtime/philox.h"

#if defined(__CUDACC__)

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "runtime/cuda_check.h"

#define EMBER_KERNEL_NS cuda
#define EMBER_EMULATED 0

namespace ember::kernels::detail {
inline void check_launch(const char* kernel, const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) ::ember::detail::throw_cuda_error(err, kernel, file, line);
}
}  // namespace ember::kernels::detail

#define EMBER_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                             \
  do {                                                                                           \
    kernel<<<(grid), (block), (shared_bytes), static_cast<cudaStream_t>(stream)>>>(__VA_ARGS__); \
    ::ember::kernels::detail::check_launch(#kernel, __FILE__, __LINE__);                         \
  } while (0)
#define EMBER_DYNAMIC_SHARED(T, name)                                    \
  extern __shared__ __align__(16) unsigned char ember_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(ember_dynamic_shared_)
#define EMBER_COUNT_WORK(flops, bytes) \
  do {                                 \
    (void)sizeof(flops);               \
    (void)sizeof(bytes);               \
  } while (0)
#define EMBER_SET_MAX_DYNAMIC_SHARED(kernel, bytes)                                          \
  EMBER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                        static_cast<int>(bytes)))

#else  // g++: the SIMT emulator

#include "runtime/simt/device_api.h"

#define EMBER_KERNEL_NS emu
#define EMBER_EMULATED 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static thread_local  // a worker runs one block at a time
#define __constant__
#define __launch_bounds__(...)
// As CUDA's headers define it, so that `__shared__ __align__(16) T s[n];` compiles.
#define __align__(n) __attribute__((aligned(n)))

#define EMBER_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                          \
  ::ember::simt::launch(#kernel, __FILE__, __LINE__, kernel, (grid), (block), (shared_bytes), \
                        (stream), ##__VA_ARGS__)
#define EMBER_DYNAMIC_SHARED(T, name) \
  T* name = reinterpret_cast<T*>(::ember::simt::dynamic_shared_memory())
#define EMBER_COUNT_WORK(flops, bytes) \
  ::ember::simt::count_work(static_cast<int64_t>(flops), static_cast<int64_t>(bytes))
#define EMBER_SET_MAX_DYNAMIC_SHARED(kernel, bytes) \
  ::ember::simt::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), (bytes))

#endif

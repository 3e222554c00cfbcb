// Device-side helpers shared by the kernel files: launch sizes for grid-stride loops, the
// float/double dispatch of the launchers and the offsets of a strided operand. Included by .cu
// files after kernels/cuda/compat.h.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/kernel_table.h"

namespace ember::kernels::EMBER_KERNEL_NS::detail {

constexpr int kBlock = 256;
// Grid-stride loops cap the grid: a few waves of blocks per multiprocessor are enough.
constexpr int64_t kMaxBlocks = 4096;

#if !EMBER_EMULATED
// An attribute of the current CUDA device, or 0 when the query fails.
inline int device_attribute(cudaDeviceAttr attr) {
  int device = 0, n = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&n, attr, device) != cudaSuccess)
    return 0;
  return n;
}
#endif

// The current device's multiprocessors (the emulator's for emu; 132, an H100/H200's, when the
// query fails): launchers that size tiles to fill the GPU use it.
inline int multiprocessors() {
#if EMBER_EMULATED
  return gpu::backend(DeviceType::EMU).properties(0).multiprocessors;
#else
  const int n = device_attribute(cudaDevAttrMultiProcessorCount);
  return n > 0 ? n : 132;
#endif
}

// The current device's compute capability as major * 10 + minor (the emulator's: 90).
inline int compute_capability() {
#if EMBER_EMULATED
  const gpu::DeviceProps p = gpu::backend(DeviceType::EMU).properties(0);
  return 10 * p.major + p.minor;
#else
  return 10 * device_attribute(cudaDevAttrComputeCapabilityMajor) +
         device_attribute(cudaDevAttrComputeCapabilityMinor);
#endif
}

// The current device's limit on gridDim.y and gridDim.z (CUDA's 65535; the emulator's may be
// lowered, simt::Options::max_grid_yz): launchers whose blockIdx.y or .z loops past it cap there.
inline unsigned max_grid_yz() {
#if EMBER_EMULATED
  const gpu::DeviceProps p = gpu::backend(DeviceType::EMU).properties(0);
  return static_cast<unsigned>(p.max_grid_y < p.max_grid_z ? p.max_grid_y : p.max_grid_z);
#else
  const int y = device_attribute(cudaDevAttrMaxGridDimY);
  const int z = device_attribute(cudaDevAttrMaxGridDimZ);
  if (y <= 0 || z <= 0) return 65535;
  return static_cast<unsigned>(y < z ? y : z);
#endif
}

// The current device's opt-in limit of dynamic shared memory per block (the emulator's
// simt::Options::shared_optin; 48 KiB, the limit without opting in, when the query fails).
inline size_t max_shared_optin() {
#if EMBER_EMULATED
  return gpu::backend(DeviceType::EMU).properties(0).shared_mem_per_block_optin;
#else
  const int n = device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  return n > 0 ? size_t(n) : size_t(48) * 1024;
#endif
}

inline unsigned blocks_for(int64_t n, int block = kBlock) {
  const int64_t b = (n + block - 1) / block;
  return static_cast<unsigned>(b < 1 ? 1 : (b < kMaxBlocks ? b : kMaxBlocks));
}

// Calls f(T{}) with T the element type of t, float or double; std::invalid_argument naming `op`
// for any other dtype.
template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  if (t == DType::f32) return f(float{});
  if (t == DType::f64) return f(double{});
  throw std::invalid_argument(std::string(op) + ": kernels exist for float32 and float64 only");
}

// Note [Half storage]
// float16 (__half) and bfloat16 (__nv_bfloat16) are storage types: a kernel loads them, computes
// in float (compute_t<T>) and rounds to nearest even once, when it stores. So a half result is
// the float32 op on the same half inputs, rounded: within 1 ulp of the exact result for a single
// operation, and as accurate as float32 accumulation for reductions. Contiguous elementwise
// kernels move them two at a time (__half2, __nv_bfloat162).
template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <typename T>
using compute_t = std::conditional_t<kIsHalf<T>, float, T>;
// The pair type of a half type (__half2, __nv_bfloat162).
template <typename T>
using pair_t = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;

// Note [Half NaNs keep their sign]: the GPU's half-to-float conversion (cvt.f32.f16) turns every
// NaN into the positive canonical one; runtime/half.h's (the cpu's and the emulator's) keeps its
// sign and payload. Casts widen through `widen` so that cuda gives the emulator's bits; computing
// kernels need not (a NaN's sign means nothing to arithmetic).
__device__ __forceinline__ float widen(__half h) {
  const unsigned b = __half_as_ushort(h);
  if ((b & 0x7C00u) == 0x7C00u && (b & 0x03FFu) != 0)
    return __uint_as_float(((b & 0x8000u) << 16) | 0x7F800000u | ((b & 0x03FFu) << 13));
  return __half2float(h);
}
__device__ __forceinline__ float widen(__nv_bfloat16 h) { return __bfloat162float(h); }

// `v` rounded to T; to a half type through float, as the cpu rounds (runtime/dtype.h's
// scalar_cast), so that every device stores the same bits.
template <typename T, typename S>
__device__ __forceinline__ T narrow(S v) {
  if constexpr (kIsHalf<T>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

// As dispatch_float, with float16 and bfloat16 too (Note [Half storage]).
template <typename F>
void dispatch_float_half(DType t, const char* op, F&& f) {
  if (t == DType::f32) return f(float{});
  if (t == DType::f64) return f(double{});
  if (t == DType::f16) return f(__half{});
  if (t == DType::bf16) return f(__nv_bfloat16{});
  throw std::invalid_argument(std::string(op) +
                              ": kernels exist for float32, float64, float16 and bfloat16 only");
}

// As dispatch_float_half, with int32 and int64 too: the dtypes the GPU backends compute in
// (ops::check_compute_dtype); uint8 and bool as well where `bytes_too` (kernels that only move or
// count them).
template <typename F>
void dispatch_compute(DType t, const char* op, F&& f, bool bytes_too = false) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::f16: return f(__half{});
    case DType::bf16: return f(__nv_bfloat16{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::u8:
      if (bytes_too) return f(uint8_t{});
      break;
    case DType::b8:
      if (bytes_too) return f(bool{});
      break;
  }
  throw std::invalid_argument(std::string(op) + ": no GPU kernel for dtype " + dtype_name(t));
}

__device__ __forceinline__ int64_t global_thread() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_threads() {
  return int64_t(gridDim.x) * blockDim.x;
}

// Element offsets of each operand at row-major position `i` of the iteration space.
template <int N>
__device__ __forceinline__ void strided_offsets(const StridedIndex<N>& s, int64_t i,
                                                int64_t (&off)[N]) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = s.ndim - 1; d >= 0; --d) {
    const int64_t size = s.sizes[d];
    const int64_t c = i % size;
    i /= size;
    for (int k = 0; k < N; ++k) off[k] += c * s.strides[k][d];
  }
}

}  // namespace ember::kernels::EMBER_KERNEL_NS::detail

// Elementwise kernels: grid-stride loops, a contiguous fast path (float4 loads and stores for
// aligned float32 buffers) and a strided path that broadcasts through zero strides.
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/elementwise.cuh"

#include <stdexcept>
#include <string>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using gpu_types::BinaryOp;
using gpu_types::Scalar;
using gpu_types::StridedIndex;
using gpu_types::UnaryOp;
using namespace detail;

__device__ __forceinline__ float pow_of(float x, float y) {
  return powf(x, y);
}
__device__ __forceinline__ double pow_of(double x, double y) {
  return pow(x, y);
}

// One binary op on one pair; comparisons give 1 or 0.
template <typename T>
__device__ __forceinline__ T apply_binary(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::add:
      return x + y;
    case BinaryOp::sub:
      return x - y;
    case BinaryOp::mul:
      return x * y;
    case BinaryOp::div:
      return x / y;
    case BinaryOp::pow:
      return pow_of(x, y);
    case BinaryOp::maximum:
      return (x != x || y != y) ? x + y : (x > y ? x : y);
    case BinaryOp::minimum:
      return (x != x || y != y) ? x + y : (x < y ? x : y);
    case BinaryOp::eq:
      return T(x == y);
    case BinaryOp::ne:
      return T(x != y);
    case BinaryOp::lt:
      return T(x < y);
    case BinaryOp::le:
      return T(x <= y);
    case BinaryOp::gt:
      return T(x > y);
    case BinaryOp::ge:
      return T(x >= y);
  }
  return T(0);
}

template <typename T>
__device__ __forceinline__ T apply_unary(UnaryOp op, T x, T lo, T hi) {
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::abs:
      return x < T(0) ? -x : x;
    case UnaryOp::exp:
      return exp(x);
    case UnaryOp::log:
      return log(x);
    case UnaryOp::sqrt:
      return sqrt(x);
    case UnaryOp::rsqrt:
      return T(1) / sqrt(x);
    case UnaryOp::clamp:
      if (x != x) return x;
      return x < lo ? (lo > hi ? hi : lo) : (x > hi ? hi : x);
  }
  return x;
}

// O is T, or bool for comparisons.
template <typename T, typename O>
__global__ void binary_contiguous_kernel(BinaryOp op, int64_t n, O* __restrict__ out,
                                         const T* __restrict__ a, const T* __restrict__ b) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    out[i] = static_cast<O>(apply_binary(op, a[i], b[i]));
}

// float32 with every buffer 16-byte aligned: four elements per load, then the tail.
__global__ void binary_vec4_f32_kernel(BinaryOp op, int64_t n, float* __restrict__ out,
                                       const float* __restrict__ a, const float* __restrict__ b) {
  const int64_t nv = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  const float4* b4 = reinterpret_cast<const float4*>(b);
  float4* o4 = reinterpret_cast<float4*>(out);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    const float4 x = a4[i], y = b4[i];
    o4[i] = make_float4(apply_binary(op, x.x, y.x), apply_binary(op, x.y, y.y),
                        apply_binary(op, x.z, y.z), apply_binary(op, x.w, y.w));
  }
  for (int64_t i = nv * 4 + global_thread(); i < n; i += grid_threads())
    out[i] = apply_binary(op, a[i], b[i]);
}

template <typename T, typename O>
__global__ void binary_strided_kernel(BinaryOp op, StridedIndex<2> s, int64_t n,
                                      O* __restrict__ out, const T* __restrict__ a,
                                      const T* __restrict__ b) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    int64_t off[2];
    strided_offsets(s, i, off);
    out[i] = static_cast<O>(apply_binary(op, a[off[0]], b[off[1]]));
  }
}

template <typename T>
__global__ void unary_contiguous_kernel(UnaryOp op, T lo, T hi, int64_t n, T* __restrict__ out,
                                        const T* __restrict__ a) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    out[i] = apply_unary(op, a[i], lo, hi);
}

__global__ void unary_vec4_f32_kernel(UnaryOp op, float lo, float hi, int64_t n,
                                      float* __restrict__ out, const float* __restrict__ a) {
  const int64_t nv = n / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a);
  float4* o4 = reinterpret_cast<float4*>(out);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    const float4 x = a4[i];
    o4[i] = make_float4(apply_unary(op, x.x, lo, hi), apply_unary(op, x.y, lo, hi),
                        apply_unary(op, x.z, lo, hi), apply_unary(op, x.w, lo, hi));
  }
  for (int64_t i = nv * 4 + global_thread(); i < n; i += grid_threads())
    out[i] = apply_unary(op, a[i], lo, hi);
}

template <typename T>
__global__ void unary_strided_kernel(UnaryOp op, T lo, T hi, StridedIndex<1> s, int64_t n,
                                     T* __restrict__ out, const T* __restrict__ a) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    int64_t off[1];
    strided_offsets(s, i, off);
    out[i] = apply_unary(op, a[off[0]], lo, hi);
  }
}

template <typename T>
__global__ void where_strided_kernel(StridedIndex<3> s, int64_t n, T* __restrict__ out,
                                     const bool* __restrict__ cond, const T* __restrict__ a,
                                     const T* __restrict__ b) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    int64_t off[3];
    strided_offsets(s, i, off);
    out[i] = cond[off[0]] ? a[off[1]] : b[off[2]];
  }
}

template <int N>
int64_t count(const StridedIndex<N>& s) {
  int64_t n = 1;
  for (int d = 0; d < s.ndim; ++d) n *= s.sizes[d];
  return n;
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

void require_float(Scalar t, const char* what) {
  if (t != Scalar::f32 && t != Scalar::f64)
    throw std::invalid_argument(std::string(what) + ": only float32 and float64 kernels exist");
}

template <typename T>
void binary_contiguous_t(BinaryOp op, int64_t n, void* out, const void* a, const void* b,
                         gpu::Stream stream) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  if (gpu_types::is_comparison(op)) {
    auto* k = &binary_contiguous_kernel<T, bool>;
    EMBER_LAUNCH(k, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, n, static_cast<bool*>(out),
                 pa, pb);
    return;
  }
  if constexpr (sizeof(T) == 4) {
    if (aligned16(out) && aligned16(a) && aligned16(b)) {
      EMBER_LAUNCH(binary_vec4_f32_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0, stream,
                   op, n, static_cast<float*>(out), pa, pb);
      return;
    }
  }
  auto* k = &binary_contiguous_kernel<T, T>;
  EMBER_LAUNCH(k, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, n, static_cast<T*>(out), pa,
               pb);
}

template <typename T>
void binary_strided_t(BinaryOp op, const StridedIndex<2>& s, void* out, const void* a,
                      const void* b, gpu::Stream stream) {
  const int64_t n = count(s);
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  if (gpu_types::is_comparison(op)) {
    auto* k = &binary_strided_kernel<T, bool>;
    EMBER_LAUNCH(k, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, s, n, static_cast<bool*>(out),
                 pa, pb);
  } else {
    auto* k = &binary_strided_kernel<T, T>;
    EMBER_LAUNCH(k, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, s, n, static_cast<T*>(out),
                 pa, pb);
  }
}

template <typename T>
void unary_contiguous_t(UnaryOp op, double lo, double hi, int64_t n, void* out, const void* a,
                        gpu::Stream stream) {
  if constexpr (sizeof(T) == 4) {
    if (aligned16(out) && aligned16(a)) {
      EMBER_LAUNCH(unary_vec4_f32_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0, stream,
                   op, float(lo), float(hi), n, static_cast<float*>(out),
                   static_cast<const float*>(a));
      return;
    }
  }
  EMBER_LAUNCH(unary_contiguous_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, T(lo),
               T(hi), n, static_cast<T*>(out), static_cast<const T*>(a));
}

}  // namespace

void binary_contiguous(BinaryOp op, Scalar t, int64_t n, void* out, const void* a, const void* b,
                       gpu::Stream stream) {
  require_float(t, "binary_contiguous");
  if (n == 0) return;
  if (t == Scalar::f32)
    binary_contiguous_t<float>(op, n, out, a, b, stream);
  else
    binary_contiguous_t<double>(op, n, out, a, b, stream);
}

void binary_strided(BinaryOp op, Scalar t, const StridedIndex<2>& index, void* out, const void* a,
                    const void* b, gpu::Stream stream) {
  require_float(t, "binary_strided");
  if (count(index) == 0) return;
  if (t == Scalar::f32)
    binary_strided_t<float>(op, index, out, a, b, stream);
  else
    binary_strided_t<double>(op, index, out, a, b, stream);
}

void unary_contiguous(UnaryOp op, Scalar t, double lo, double hi, int64_t n, void* out,
                      const void* a, gpu::Stream stream) {
  require_float(t, "unary_contiguous");
  if (n == 0) return;
  if (t == Scalar::f32)
    unary_contiguous_t<float>(op, lo, hi, n, out, a, stream);
  else
    unary_contiguous_t<double>(op, lo, hi, n, out, a, stream);
}

void unary_strided(UnaryOp op, Scalar t, double lo, double hi, const StridedIndex<1>& index,
                   void* out, const void* a, gpu::Stream stream) {
  require_float(t, "unary_strided");
  const int64_t n = count(index);
  if (n == 0) return;
  if (t == Scalar::f32)
    EMBER_LAUNCH(unary_strided_kernel<float>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op,
                 float(lo), float(hi), index, n, static_cast<float*>(out),
                 static_cast<const float*>(a));
  else
    EMBER_LAUNCH(unary_strided_kernel<double>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, lo,
                 hi, index, n, static_cast<double*>(out), static_cast<const double*>(a));
}

void where_strided(Scalar t, const StridedIndex<3>& index, void* out, const bool* cond,
                   const void* a, const void* b, gpu::Stream stream) {
  require_float(t, "where_strided");
  const int64_t n = count(index);
  if (n == 0) return;
  if (t == Scalar::f32)
    EMBER_LAUNCH(where_strided_kernel<float>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, index,
                 n, static_cast<float*>(out), cond, static_cast<const float*>(a),
                 static_cast<const float*>(b));
  else
    EMBER_LAUNCH(where_strided_kernel<double>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, index,
                 n, static_cast<double*>(out), cond, static_cast<const double*>(a),
                 static_cast<const double*>(b));
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

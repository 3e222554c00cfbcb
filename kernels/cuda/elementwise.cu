// Elementwise kernels: grid-stride loops, a contiguous fast path (float4 loads and stores for
// aligned float32 buffers, __half2/__nv_bfloat162 for aligned half buffers) and a strided path
// that broadcasts through zero strides. Element types: float32, float64, int32, int64, and
// float16 and bfloat16 computed in float (Note [Half storage] in kernels/cuda/device_utils.cuh).
#include "kernels/cuda/compat.h"
#include "kernels/cuda/device_utils.cuh"
#include "kernels/kernel_table.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ember::kernels::EMBER_KERNEL_NS {
namespace {

using namespace detail;

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

__device__ __forceinline__ float pow_of(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double pow_of(double x, double y) { return pow(x, y); }

// Integer power as the CPU computes it: a negative exponent gives 0 unless the base is 1 or -1;
// products wrap (computed unsigned, so without undefined behaviour).
template <typename T>
__device__ __forceinline__ T int_pow(T base, T e) {
  using U = std::make_unsigned_t<T>;
  if (e < 0) return base == 1 ? T(1) : (base == -1 ? (e % 2 == 0 ? T(1) : T(-1)) : T(0));
  U result = 1, b = static_cast<U>(base);
  for (U k = static_cast<U>(e); k; k >>= 1) {
    if (k & 1) result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

// fmod and remainder as the CPU computes them (kernels/cpu/elementwise.cpp): an integer divisor of
// 0 (or -1, whose % may overflow) gives 0.
template <typename T>
__device__ __forceinline__ T fmod_of(T x, T y) {
  if constexpr (kIsFloat<T>) {
    return fmod(x, y);
  } else {
    if (y == 0) return T(0);
    if constexpr (std::is_signed_v<T>)
      if (y == T(-1)) return T(0);
    return static_cast<T>(x % y);
  }
}
template <typename T>
__device__ __forceinline__ T remainder_of(T x, T y) {
  const T r = fmod_of(x, y);
  return r != T(0) && ((r < T(0)) != (y < T(0))) ? static_cast<T>(r + y) : r;
}

// One binary op on one pair; comparisons give 1 or 0. maximum/minimum propagate NaN (x != x
// only for NaN). Integer T never sees div: ops/ promotes integer division to float32.
template <typename T>
__device__ __forceinline__ T apply_binary(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::add: return x + y;
    case BinaryOp::sub: return x - y;
    case BinaryOp::mul: return x * y;
    case BinaryOp::div: return kIsFloat<T> ? x / y : T(0);
    case BinaryOp::pow:
      if constexpr (kIsFloat<T>) return pow_of(x, y);
      else return int_pow(x, y);
    case BinaryOp::fmod: return fmod_of(x, y);
    case BinaryOp::remainder: return remainder_of(x, y);
    case BinaryOp::maximum: return (x != x || y != y) ? x + y : (x > y ? x : y);
    case BinaryOp::minimum: return (x != x || y != y) ? x + y : (x < y ? x : y);
    case BinaryOp::eq: return T(x == y);
    case BinaryOp::ne: return T(x != y);
    case BinaryOp::lt: return T(x < y);
    case BinaryOp::le: return T(x <= y);
    case BinaryOp::gt: return T(x > y);
    case BinaryOp::ge: return T(x >= y);
  }
  return T(0);
}

// clamp is min(max(x, lo), hi), so lo > hi gives hi; NaN passes through. Integer T only sees
// neg, abs and clamp: ops/ turns integers into float32 for the others.
template <typename T>
__device__ __forceinline__ T apply_unary(UnaryOp op, T x, T lo, T hi) {
  if constexpr (kIsFloat<T>) {
    switch (op) {
      case UnaryOp::exp: return exp(x);
      case UnaryOp::log: return log(x);
      case UnaryOp::sqrt: return sqrt(x);
      case UnaryOp::rsqrt: return T(1) / sqrt(x);
      case UnaryOp::floor: return floor(x);
      case UnaryOp::ceil: return ceil(x);
      case UnaryOp::round: return rint(x);
      case UnaryOp::trunc: return trunc(x);
      case UnaryOp::sin: return sin(x);
      case UnaryOp::cos: return cos(x);
      case UnaryOp::erf: return erf(x);
      default: break;
    }
  }
  switch (op) {
    case UnaryOp::neg: return static_cast<T>(-x);
    case UnaryOp::abs: return x < T(0) ? static_cast<T>(-x) : x;
    case UnaryOp::sign:
      if (x != x) return x;
      return static_cast<T>((T(0) < x) - (x < T(0)));
    case UnaryOp::clamp:
      if (x != x) return x;
      return x < lo ? (lo > hi ? hi : lo) : (x > hi ? hi : x);
    default: return x;
  }
}

// O is T, or bool for comparisons. Half types compute in float (C).
template <typename T, typename O>
__global__ void binary_contiguous_kernel(BinaryOp op, int64_t n, O* __restrict__ out,
                                         const T* __restrict__ a, const T* __restrict__ b) {
  using C = compute_t<T>;
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    out[i] = static_cast<O>(apply_binary(op, C(a[i]), C(b[i])));
}

// A half type with every buffer 4-byte aligned: two elements per load (T2 = pair_t<T>).
template <typename T>
__global__ void binary_vec2_half_kernel(BinaryOp op, int64_t n, T* __restrict__ out,
                                        const T* __restrict__ a, const T* __restrict__ b) {
  using T2 = pair_t<T>;
  const int64_t nv = n / 2;
  const T2* a2 = reinterpret_cast<const T2*>(a);
  const T2* b2 = reinterpret_cast<const T2*>(b);
  T2* o2 = reinterpret_cast<T2*>(out);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    const T2 x = a2[i], y = b2[i];
    T2 r;
    r.x = T(apply_binary(op, float(x.x), float(y.x)));
    r.y = T(apply_binary(op, float(x.y), float(y.y)));
    o2[i] = r;
  }
  for (int64_t i = nv * 2 + global_thread(); i < n; i += grid_threads())
    out[i] = T(apply_binary(op, float(a[i]), float(b[i])));
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
  using C = compute_t<T>;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    int64_t off[2];
    strided_offsets(s, i, off);
    out[i] = static_cast<O>(apply_binary(op, C(a[off[0]]), C(b[off[1]])));
  }
}

template <typename T, typename C = compute_t<T>>
__global__ void unary_contiguous_kernel(UnaryOp op, C lo, C hi, int64_t n, T* __restrict__ out,
                                        const T* __restrict__ a) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    out[i] = static_cast<T>(apply_unary(op, C(a[i]), lo, hi));
}

template <typename T>
__global__ void unary_vec2_half_kernel(UnaryOp op, float lo, float hi, int64_t n,
                                       T* __restrict__ out, const T* __restrict__ a) {
  using T2 = pair_t<T>;
  const int64_t nv = n / 2;
  const T2* a2 = reinterpret_cast<const T2*>(a);
  T2* o2 = reinterpret_cast<T2*>(out);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    const T2 x = a2[i];
    T2 r;
    r.x = T(apply_unary(op, float(x.x), lo, hi));
    r.y = T(apply_unary(op, float(x.y), lo, hi));
    o2[i] = r;
  }
  for (int64_t i = nv * 2 + global_thread(); i < n; i += grid_threads())
    out[i] = T(apply_unary(op, float(a[i]), lo, hi));
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

template <typename T, typename C = compute_t<T>>
__global__ void unary_strided_kernel(UnaryOp op, C lo, C hi, StridedIndex<1> s, int64_t n,
                                     T* __restrict__ out, const T* __restrict__ a) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    int64_t off[1];
    strided_offsets(s, i, off);
    out[i] = static_cast<T>(apply_unary(op, C(a[off[0]]), lo, hi));
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

// --- Host side ---------------------------------------------------------------------------------

template <int N>
int64_t count(const StridedIndex<N>& s) {
  int64_t n = 1;
  for (int d = 0; d < s.ndim; ++d) n *= s.sizes[d];
  return n;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
bool aligned4(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 4 == 0;
}

// Calls f(T{}) for the element type t.
template <typename F>
void dispatch(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::f16:
      return f(__half{});
    case DType::bf16:
      return f(__nv_bfloat16{});
    default: break;
  }
  throw std::invalid_argument(std::string(what) +
                              ": kernels exist for float32, float64, float16, bfloat16, int32 "
                              "and int64 only");
}

// A clamp bound in T's compute type: integers round inwards (lo up, hi down) and saturate, as
// on the CPU.
template <typename T>
compute_t<T> clamp_bound(double v, bool lower) {
  if constexpr (kIsHalf<T>) {
    return static_cast<float>(v);
  } else if constexpr (kIsFloat<T>) {
    return static_cast<T>(v);
  } else {
    v = lower ? std::ceil(v) : std::floor(v);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

template <typename T>
void binary_contiguous_t(BinaryOp op, int64_t n, void* out, const T* a, const T* b,
                         gpu::Stream stream) {
  if (is_comparison(op)) {
    auto* k = &binary_contiguous_kernel<T, bool>;
    EMBER_LAUNCH(k, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, n, static_cast<bool*>(out),
                 a, b);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (aligned16(out) && aligned16(a) && aligned16(b)) {
      EMBER_LAUNCH(binary_vec4_f32_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0, stream,
                   op, n, static_cast<float*>(out), a, b);
      return;
    }
  }
  if constexpr (kIsHalf<T>) {
    if (aligned4(out) && aligned4(a) && aligned4(b)) {
      EMBER_LAUNCH(binary_vec2_half_kernel<T>, dim3(blocks_for((n + 1) / 2)), dim3(kBlock), 0,
                   stream, op, n, static_cast<T*>(out), a, b);
      return;
    }
  }
  auto* k = &binary_contiguous_kernel<T, T>;
  EMBER_LAUNCH(k, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, n, static_cast<T*>(out), a,
               b);
}

template <typename T>
void binary_strided_t(BinaryOp op, const StridedIndex<2>& s, int64_t n, void* out, const T* a,
                      const T* b, gpu::Stream stream) {
  if (is_comparison(op)) {
    auto* k = &binary_strided_kernel<T, bool>;
    EMBER_LAUNCH(k, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, s, n,
                 static_cast<bool*>(out), a, b);
  } else {
    auto* k = &binary_strided_kernel<T, T>;
    EMBER_LAUNCH(k, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, s, n, static_cast<T*>(out),
                 a, b);
  }
}

template <typename T>
void unary_contiguous_t(UnaryOp op, compute_t<T> lo, compute_t<T> hi, int64_t n, T* out, const T* a,
                        gpu::Stream stream) {
  if constexpr (std::is_same_v<T, float>) {
    if (aligned16(out) && aligned16(a)) {
      EMBER_LAUNCH(unary_vec4_f32_kernel, dim3(blocks_for((n + 3) / 4)), dim3(kBlock), 0, stream,
                   op, lo, hi, n, out, a);
      return;
    }
  }
  if constexpr (kIsHalf<T>) {
    if (aligned4(out) && aligned4(a)) {
      EMBER_LAUNCH(unary_vec2_half_kernel<T>, dim3(blocks_for((n + 1) / 2)), dim3(kBlock), 0,
                   stream, op, lo, hi, n, out, a);
      return;
    }
  }
  EMBER_LAUNCH(unary_contiguous_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op, lo,
               hi, n, out, a);
}

}  // namespace

void binary_contiguous(BinaryOp op, DType t, int64_t n, void* out, const void* a, const void* b,
                       gpu::Stream stream) {
  dispatch(t, "binary_contiguous", [&](auto zero) {
    using T = decltype(zero);
    if (n > 0)
      binary_contiguous_t<T>(op, n, out, static_cast<const T*>(a), static_cast<const T*>(b),
                             stream);
  });
}

void binary_strided(BinaryOp op, DType t, const StridedIndex<2>& index, void* out, const void* a,
                    const void* b, gpu::Stream stream) {
  dispatch(t, "binary_strided", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = count(index);
    if (n > 0)
      binary_strided_t<T>(op, index, n, out, static_cast<const T*>(a), static_cast<const T*>(b),
                          stream);
  });
}

void unary_contiguous(UnaryOp op, DType t, const UnaryParams& p, int64_t n, void* out,
                      const void* a, gpu::Stream stream) {
  const double lo = p.lo, hi = p.hi;
  dispatch(t, "unary_contiguous", [&](auto zero) {
    using T = decltype(zero);
    if (n > 0)
      unary_contiguous_t<T>(op, clamp_bound<T>(lo, true), clamp_bound<T>(hi, false), n,
                            static_cast<T*>(out), static_cast<const T*>(a), stream);
  });
}

void unary_strided(UnaryOp op, DType t, const UnaryParams& p, const StridedIndex<1>& index,
                   void* out, const void* a, gpu::Stream stream) {
  const double lo = p.lo, hi = p.hi;
  dispatch(t, "unary_strided", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = count(index);
    if (n == 0) return;
    EMBER_LAUNCH(unary_strided_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, op,
                 clamp_bound<T>(lo, true), clamp_bound<T>(hi, false), index, n,
                 static_cast<T*>(out), static_cast<const T*>(a));
  });
}

void where_strided(DType t, const StridedIndex<3>& index, void* out, const bool* cond,
                   const void* a, const void* b, gpu::Stream stream) {
  dispatch(t, "where_strided", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = count(index);
    if (n == 0) return;
    EMBER_LAUNCH(where_strided_kernel<T>, dim3(blocks_for(n)), dim3(kBlock), 0, stream, index, n,
                 static_cast<T*>(out), cond, static_cast<const T*>(a), static_cast<const T*>(b));
  });
}

}  // namespace ember::kernels::EMBER_KERNEL_NS

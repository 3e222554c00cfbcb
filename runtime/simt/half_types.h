// __half and __nv_bfloat16 (with their pair types) for kernels under the SIMT emulator, built
// on runtime/half.h's conversions (round to nearest even, NaN and infinity kept).
//
// Arithmetic goes through float: `a * b` on two __half values is a float, rounded to half only
// when stored. A GPU rounds after every half operation; compare with tolerances.
#pragma once

#include <math.h>

#include "runtime/half.h"
#include "runtime/simt/vector_types.h"

struct __half {
  unsigned short __x;
  __half() = default;
  __half(float f) : __x(ember::float_to_half_bits(f)) {}  // NOLINT: implicit as in CUDA
  __half(double d) : __half(static_cast<float>(d)) {}     // NOLINT
  __half(int i) : __half(static_cast<float>(i)) {}        // NOLINT
  operator float() const { return ember::half_bits_to_float(__x); }
};
struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(ember::float_to_bf16_bits(f)) {}      // NOLINT
  __nv_bfloat16(double d) : __nv_bfloat16(static_cast<float>(d)) {}  // NOLINT
  __nv_bfloat16(int i) : __nv_bfloat16(static_cast<float>(i)) {}     // NOLINT
  operator float() const { return ember::bf16_bits_to_float(__x); }
};
struct alignas(4) __half2 {
  __half x, y;
};
struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
using half = __half;
using half2 = __half2;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return static_cast<float>(h); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __half __ushort_as_half(unsigned short u) {
  __half h;
  h.__x = u;
  return h;
}
inline __half __hadd(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half __hsub(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half __hmul(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half __hdiv(__half a, __half b) { return __half(float(a) / float(b)); }
inline __half __hfma(__half a, __half b, __half c) { return __half(fmaf(a, b, c)); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __half2 __float2half2_rn(float a) { return __half2{__half(a), __half(a)}; }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }
inline float2 __half22float2(__half2 h) { return float2{float(h.x), float(h.y)}; }

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return static_cast<float>(b); }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)};
}
inline float2 __bfloat1622float2(__nv_bfloat162 b) { return float2{float(b.x), float(b.y)}; }

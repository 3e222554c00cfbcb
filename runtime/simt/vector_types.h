// CUDA's built-in vector types (uint3, dim3, float2, float4, int4, ...) and their make_*
// functions, for kernels compiled by g++ against the SIMT emulator. Layouts and alignments match
// CUDA's vector_types.h so a kernel's vectorised loads mean the same thing in both worlds.
#pragma once

#define EMBER_SIMT_VEC2(T, name, align) \
  struct alignas(align) name {          \
    T x, y;                             \
  };                                    \
  inline constexpr name make_##name(T x, T y) { return name{x, y}; }
#define EMBER_SIMT_VEC3(T, name) \
  struct name {                  \
    T x, y, z;                   \
  };                             \
  inline constexpr name make_##name(T x, T y, T z) { return name{x, y, z}; }
#define EMBER_SIMT_VEC4(T, name, align) \
  struct alignas(align) name {          \
    T x, y, z, w;                       \
  };                                    \
  inline constexpr name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }

EMBER_SIMT_VEC2(signed char, char2, 2)
EMBER_SIMT_VEC4(signed char, char4, 4)
EMBER_SIMT_VEC2(unsigned char, uchar2, 2)
EMBER_SIMT_VEC4(unsigned char, uchar4, 4)
EMBER_SIMT_VEC2(short, short2, 4)
EMBER_SIMT_VEC2(unsigned short, ushort2, 4)
EMBER_SIMT_VEC2(int, int2, 8)
EMBER_SIMT_VEC3(int, int3)
EMBER_SIMT_VEC4(int, int4, 16)
EMBER_SIMT_VEC2(unsigned, uint2, 8)
EMBER_SIMT_VEC3(unsigned, uint3)
EMBER_SIMT_VEC4(unsigned, uint4, 16)
EMBER_SIMT_VEC2(long long, longlong2, 16)
EMBER_SIMT_VEC2(float, float2, 8)
EMBER_SIMT_VEC3(float, float3)
EMBER_SIMT_VEC4(float, float4, 16)
EMBER_SIMT_VEC2(double, double2, 16)

#undef EMBER_SIMT_VEC2
#undef EMBER_SIMT_VEC3
#undef EMBER_SIMT_VEC4

// Launch dimensions; unspecified components are 1, as in CUDA.
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}  // NOLINT: implicit as in CUDA
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

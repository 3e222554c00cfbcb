// CUDA's atomic functions for kernels under the SIMT emulator, on GCC's __atomic builtins.
// Relaxed ordering, as CUDA's atomics are; they are real atomics, so blocks running on several
// workers at once stay correct, and ThreadSanitizer treats them as synchronisation-free atomics.
#pragma once

#include <cstring>

namespace ember::simt {
template <typename T, typename F>
inline T atomic_update(T* addr, F f) {  // compare-and-swap loop for floating point
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "4- or 8-byte values only");
  using Bits = std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>;
  Bits* p = reinterpret_cast<Bits*>(addr);
  Bits old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    T o;
    std::memcpy(&o, &old, sizeof(T));
    T n = f(o);
    Bits nb;
    std::memcpy(&nb, &n, sizeof(T));
    if (__atomic_compare_exchange_n(p, &old, nb, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return o;
  }
}
}  // namespace ember::simt

#define EMBER_SIMT_ATOMIC_INT(T)                                                               \
  inline T atomicAdd(T* a, T v) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }         \
  inline T atomicSub(T* a, T v) { return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED); }         \
  inline T atomicAnd(T* a, T v) { return __atomic_fetch_and(a, v, __ATOMIC_RELAXED); }         \
  inline T atomicOr(T* a, T v) { return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }           \
  inline T atomicXor(T* a, T v) { return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED); }         \
  inline T atomicExch(T* a, T v) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }       \
  inline T atomicCAS(T* a, T cmp, T v) {                                                       \
    __atomic_compare_exchange_n(a, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);        \
    return cmp;                                                                                \
  }                                                                                            \
  inline T atomicMin(T* a, T v) {                                                              \
    T old = __atomic_load_n(a, __ATOMIC_RELAXED);                                              \
    while (v < old &&                                                                          \
           !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
      ;                                                                                        \
    return old;                                                                                \
  }                                                                                            \
  inline T atomicMax(T* a, T v) {                                                              \
    T old = __atomic_load_n(a, __ATOMIC_RELAXED);                                              \
    while (v > old &&                                                                          \
           !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
      ;                                                                                        \
    return old;                                                                                \
  }

EMBER_SIMT_ATOMIC_INT(int)
EMBER_SIMT_ATOMIC_INT(unsigned)
EMBER_SIMT_ATOMIC_INT(long long)
EMBER_SIMT_ATOMIC_INT(unsigned long long)
#undef EMBER_SIMT_ATOMIC_INT

inline float atomicAdd(float* a, float v) {
  return ember::simt::atomic_update(a, [v](float o) { return o + v; });
}
inline double atomicAdd(double* a, double v) {
  return ember::simt::atomic_update(a, [v](double o) { return o + v; });
}
inline float atomicExch(float* a, float v) {
  return ember::simt::atomic_update(a, [v](float) { return v; });
}
// Wrapping increment/decrement, as CUDA defines them.
inline unsigned atomicInc(unsigned* a, unsigned limit) {
  unsigned old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(a, &old, old >= limit ? 0u : old + 1, true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED))
    ;
  return old;
}
inline unsigned atomicDec(unsigned* a, unsigned limit) {
  unsigned old = __atomic_load_n(a, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(a, &old, (old == 0 || old > limit) ? limit : old - 1, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
  return old;
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

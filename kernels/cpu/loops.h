// Private helpers for the CPU kernels: dtype dispatch and parallel strided iteration.
// Included only by kernels/cpu/*.cpp (it uses OpenMP pragmas and throws DTypeError).
#pragma once

#include <omp.h>
#if defined(__SSE__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/strided_loop.h"

namespace ember::kernels::cpu {

// Below this many elements a loop runs on the calling thread: waking the OpenMP team costs
// more than the work.
constexpr int64_t kParallelGrain = 32768;

// The widest vector register the build's -march offers, in bytes: the size of the GCC vector
// extensions the kernels compute with (wider ones are split by the compiler, sometimes through
// the integer registers).
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
#else
constexpr int kVectorBytes = 16;
#endif

// clamp(x, lo, hi) as every cpu kernel computes it: a NaN fails both comparisons and passes
// through; the branch-free form vectorises.
template <typename T>
inline T clamp_value(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
// v[0..n) clamped in place: a convolution's output clamped while it is in cache
// (ops::conv2d_bias_clamp).
template <typename T>
inline void clamp_span(T* v, int64_t n, T lo, T hi) {
  for (int64_t i = 0; i < n; ++i) v[i] = clamp_value(v[i], lo, hi);
}

// float16 (Half) and bfloat16 (BFloat16) are storage types: the kernels load them, compute in
// float (compute_t<T>) and round to nearest even when they store, as the GPU kernels do (Note
// [Half storage] in kernels/cuda/device_utils.cuh).
template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <typename T>
using compute_t = std::conditional_t<kIsHalf<T>, float, T>;

// Calls f(T{}) with T the C++ type of `t`: every dtype.
template <typename F>
void dispatch_cpu_dtype(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f16:
      return f(Half{});
    case DType::bf16:
      return f(BFloat16{});
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    case DType::i32:
      return f(int32_t{});
    case DType::i64:
      return f(int64_t{});
    case DType::u8:
      return f(uint8_t{});
    case DType::b8:
      return f(bool{});
    default:
      break;
  }
  EMBER_THROW(DTypeError, op, ": the cpu kernel has no ", dtype_name(t), " version");
}

// Calls f(float{}) or f(double{}) for the two floating dtypes the float-only kernels (conv,
// pooling) implement; DTypeError naming `op` for any other.
template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32:
      return f(float{});
    case DType::f64:
      return f(double{});
    default:
      break;
  }
  EMBER_THROW(DTypeError, op, ": the cpu kernel has no ", dtype_name(t),
              " version; expected float32 or float64");
}

// EMBER_DISPATCH_FLOAT (runtime/dtype.h) with float16 and bfloat16 too.
#define EMBER_DISPATCH_FLOAT_HALF(dtype, op_name, ...)                                        \
  [&] {                                                                                       \
    switch (dtype) {                                                                          \
      EMBER_DTYPE_CASE(f32, __VA_ARGS__)                                                      \
      EMBER_DTYPE_CASE(f64, __VA_ARGS__)                                                      \
      EMBER_DTYPE_CASE(f16, __VA_ARGS__) EMBER_DTYPE_CASE(bf16, __VA_ARGS__) default : break; \
    }                                                                                         \
    EMBER_THROW(DTypeError, op_name, ": expected a floating tensor, got ",                    \
                ::ember::dtype_name(dtype));                                                  \
  }()

// Runs inner(ptrs, byte_strides, n) over every innermost run of `loop`, in parallel when the
// loop is large. A single long run (the contiguous case) is cut into chunks so that it, too,
// spreads over the threads.
template <int N, typename F>
void parallel_runs(const StridedLoop<N>& loop, const std::array<char*, N>& base, F&& inner) {
  const int64_t outer = loop.outer_count();
  const int64_t n = loop.inner_size();
  const auto st = loop.inner_strides();
  const int64_t total = outer * n;
  if (total < kParallelGrain || omp_get_max_threads() == 1 || omp_in_parallel()) {
    loop.run(base, inner);
    return;
  }
  if (outer == 1) {
    const int64_t chunks = std::min<int64_t>(omp_get_max_threads() * 4, n / 4096 + 1);
    const int64_t len = (n + chunks - 1) / chunks;
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t lo = c * len, hi = std::min(n, lo + len);
      if (lo >= hi) continue;
      std::array<char*, N> p;
      for (int i = 0; i < N; ++i) p[i] = base[i] + lo * st[i];
      inner(p, st, hi - lo);
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < outer; ++k) {
    const auto off = loop.outer_offsets(k);
    std::array<char*, N> p;
    for (int i = 0; i < N; ++i) p[i] = base[i] + off[i];
    inner(p, st, n);
  }
}

// Contiguous version: inner(first, count) over [0, n) in chunks, in parallel when large.
template <typename F>
void parallel_range(int64_t n, F&& inner) {
  if (n < kParallelGrain || omp_get_max_threads() == 1 || omp_in_parallel()) {
    inner(int64_t{0}, n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(omp_get_max_threads() * 4, n / 4096 + 1);
  const int64_t len = (n + chunks - 1) / chunks;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * len, hi = std::min(n, lo + len);
    if (lo < hi) inner(lo, hi - lo);
  }
}

// Note [Streaming stores]
// An output much larger than the caches is written with non-temporal stores. An ordinary store
// first reads the line it writes into the cache: for an output of many megabytes, a read from
// memory of every byte the kernel writes, which it never uses, and lines that only evict the
// kernel's inputs. Group norm's forward on [16, 256, 32, 32] (16.8 MB out) took 2.8-4.7 ms
// against 2.2-3.8 with streaming stores on a Xeon, one thread (docs/benchmarks-cpu.md). Smaller
// outputs stay in the caches, where the op that reads them next finds them.
constexpr int64_t kStreamBytes = int64_t{8} << 20;
inline bool streams(int64_t bytes) {
  return bytes >= kStreamBytes;
}

// y[j] = value(load) for j in [0, n): `load(p)` gives p[j] in compute_t<T>, and value computes
// y's element from such loads of its inputs. With `stream`, a float32 y is written four lanes at
// a time by non-temporal stores (the loads then give four floats from p + j, and value's
// arithmetic is the same); call stream_fence() before y is read by another thread.
template <typename T, typename F>
void write_row(T* y, int64_t n, bool stream, F&& value) {
  using C = compute_t<T>;
  int64_t j = 0;
  auto one = [&](int64_t i) {
    y[i] = static_cast<T>(value([i](const auto* p) { return static_cast<C>(p[i]); }));
  };
#if defined(__SSE__)
  if constexpr (std::is_same_v<T, float>) {
    // The widest vector this build targets (kVectorBytes): a narrower one costs the value's
    // arithmetic twice or four times the instructions (with 128-bit vectors, layer norm's
    // forward and backward on [32, 128, 768] took 10-20% longer streamed than stored, on a Xeon
    // with AVX-512).
    constexpr int kWidth = kVectorBytes / sizeof(float);
    typedef float FV __attribute__((vector_size(kVectorBytes), aligned(4)));
    if (stream) {
      for (; j < n && reinterpret_cast<uintptr_t>(y + j) % sizeof(FV) != 0; ++j) one(j);
      for (; j + kWidth <= n; j += kWidth) {
        const FV v = value([j](const float* p) { return *reinterpret_cast<const FV*>(p + j); });
#if defined(__AVX512F__)
        _mm512_stream_ps(y + j, reinterpret_cast<__m512>(v));
#elif defined(__AVX__)
        _mm256_stream_ps(y + j, reinterpret_cast<__m256>(v));
#else
        _mm_stream_ps(y + j, reinterpret_cast<__m128>(v));
#endif
      }
    }
  }
#endif
  for (; j < n; ++j) one(j);
}
inline void stream_fence() {
#if defined(__SSE__)
  _mm_sfence();
#endif
}

// Runs worker(wk) for wk in [0, nw), one OpenMP thread each; a single worker runs on the calling
// thread, outside any OpenMP region (so its Eigen products may still use Eigen's threads, Note
// [Eigen's threads]). For work split into a fixed number of parts whose results combine in a
// fixed order.
template <typename F>
void run_workers(int64_t nw, F&& worker) {
  if (nw == 1) return worker(int64_t{0});
#pragma omp parallel for schedule(static, 1) num_threads(static_cast <int>(nw))
  for (int64_t wk = 0; wk < nw; ++wk) worker(wk);
}

// For kernels whose half path is their float kernel run on float copies (softmax, batch norm):
// n elements widened to float, and rounded back once into `out`.
template <typename T>
std::vector<float> float_copy(const T* p, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  parallel_range(n, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) v[i] = static_cast<float>(p[i]);
  });
  return v;
}
template <typename T>
void round_into(const std::vector<float>& v, T* out) {
  parallel_range(static_cast<int64_t>(v.size()), [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) out[i] = T(v[i]);
  });
}

// The same, type-erased over the two half dtypes.
inline bool is_half_dtype(DType t) {
  return t == DType::f16 || t == DType::bf16;
}
inline std::vector<float> widen(DType t, const void* p, int64_t n) {
  return t == DType::f16 ? float_copy(static_cast<const Half*>(p), n)
                         : float_copy(static_cast<const BFloat16*>(p), n);
}
inline void narrow_into(DType t, const std::vector<float>& v, void* out) {
  if (t == DType::f16)
    round_into(v, static_cast<Half*>(out));
  else
    round_into(v, static_cast<BFloat16*>(out));
}

// A float kernel with one input array (n_in elements) and one output array (n_out): body(in, out)
// called with the typed pointers for float32/float64, and for float16/bfloat16 with float copies
// whose output is rounded once into `out`. DTypeError naming `op` for any other dtype.
template <typename F>
void run_widened(DType t, const char* op, const void* in, int64_t n_in, void* out, int64_t n_out,
                 F&& body) {
  if (is_half_dtype(t)) {
    const std::vector<float> fin = widen(t, in, n_in);
    std::vector<float> fout(static_cast<size_t>(n_out));
    body(fin.data(), fout.data());
    narrow_into(t, fout, out);
    return;
  }
  dispatch_float(t, op, [&](auto z) {
    using T = decltype(z);
    body(static_cast<const T*>(in), static_cast<T*>(out));
  });
}

}  // namespace ember::kernels::cpu

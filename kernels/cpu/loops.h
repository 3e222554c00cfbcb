// Private helpers for the CPU kernels: dtype dispatch and parallel strided iteration.
// Included only by kernels/cpu/*.cpp (it uses OpenMP pragmas and throws DTypeError).
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/strided_loop.h"

namespace ember::kernels::cpu {

// Below this many elements a loop runs on the calling thread: waking the OpenMP team costs
// more than the work.
constexpr int64_t kParallelGrain = 32768;

// Calls f(T{}) with T the C++ type of `t`, for the dtypes the CPU kernels implement.
template <typename F>
void dispatch_cpu_dtype(DType t, const char* op, F&& f) {
  switch (t) {
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

// Runs inner(ptrs, byte_strides, n) over every innermost run of `loop`, in parallel when the
// loop is large. A single long run (the contiguous case) is cut into chunks so that it, too,
// spreads over the threads.
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

}  // namespace ember::kernels::cpu

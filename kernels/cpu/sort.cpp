// Sorting and scans on the cpu (kernels/sort_shape.h): std::stable_sort per row under the order
// every device shares (NaN above every number), and cumulative sums and products accumulated in
// double (int64 for integers), one (row, column) line per task.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernels/cpu/loops.h"
#include "kernels/kernel_table.h"
#include "kernels/scan_math.h"

namespace ember::kernels::cpu {
namespace {

// Whether key a sorts before key b (stability comes from std::stable_sort): NaN above every
// number, so last in ascending order and first in descending order.
template <typename C>
bool before(C a, C b, bool descending) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool an = std::isnan(a), bn = std::isnan(b);
    if (an || bn) return descending ? an && !bn : bn && !an;
  }
  return descending ? a > b : a < b;
}

template <typename T>
void sort_typed(const SortShape& s, const void* keys, void* sorted, int64_t* indices) {
  using C = std::conditional_t<kIsHalf<T>, float, T>;
  const T* k = static_cast<const T*>(keys);
  auto one_row = [&](int64_t r) {
    const T* row = k + r * s.n;
    int64_t* ix = indices + r * s.n;
    std::iota(ix, ix + s.n, int64_t{0});
    std::stable_sort(ix, ix + s.n, [&](int64_t a, int64_t b) {
      return before(static_cast<C>(row[a]), static_cast<C>(row[b]), s.descending);
    });
    if (sorted) {
      T* out = static_cast<T*>(sorted) + r * s.n;
      for (int64_t j = 0; j < s.n; ++j) out[j] = row[ix[j]];
    }
  };
  if (s.rows == 1 || s.rows * s.n < kParallelGrain || omp_in_parallel()) {
    for (int64_t r = 0; r < s.rows; ++r) one_row(r);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t r = 0; r < s.rows; ++r) one_row(r);
}

// Runs line(o, j) for every column (o, j) of an [outer, n, inner] block, in parallel when large.
template <typename F>
void for_each_line(const ScanShape& s, F&& line) {
  const int64_t lines = s.outer * s.inner;
  if (lines == 1 || lines * s.n < kParallelGrain || omp_in_parallel()) {
    for (int64_t l = 0; l < lines; ++l) line(l / s.inner, l % s.inner);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t l = 0; l < lines; ++l) line(l / s.inner, l % s.inner);
}

template <typename T>
void scan_typed(ScanOp op, const ScanShape& s, const void* in, void* out) {
  constexpr bool kFloat = std::is_floating_point_v<compute_t<T>>;
  using Acc = std::conditional_t<kFloat, double, int64_t>;
  using O = std::conditional_t<kFloat, T, int64_t>;
  const T* x = static_cast<const T*>(in);
  O* y = static_cast<O*>(out);
  for_each_line(s, [&](int64_t o, int64_t j) {
    const int64_t base = o * s.n * s.inner + j;
    Acc acc = op == ScanOp::sum ? Acc(0) : Acc(1);
    for (int64_t step = 0; step < s.n; ++step) {
      const int64_t i = s.reverse ? s.n - 1 - step : step;
      const Acc v = static_cast<Acc>(static_cast<compute_t<T>>(x[base + i * s.inner]));
      if constexpr (kFloat) {
        acc = op == ScanOp::sum ? acc + v : acc * v;
      } else {  // wrap-around, computed unsigned
        const uint64_t a = static_cast<uint64_t>(acc), b = static_cast<uint64_t>(v);
        acc = static_cast<int64_t>(op == ScanOp::sum ? a + b : a * b);
      }
      if constexpr (kIsHalf<T>)
        y[base + i * s.inner] = T(static_cast<float>(acc));
      else
        y[base + i * s.inner] = static_cast<O>(acc);
    }
  });
}

template <typename T>
void cumprod_backward_typed(const ScanShape& s, const T* x, const T* g, T* dx) {
  for_each_line(s, [&](int64_t o, int64_t j) {
    const int64_t base = o * s.n * s.inner + j;
    cumprod_backward_line(s.n, s.inner, x + base, g + base, dx + base);
  });
}

}  // namespace

size_t sort_workspace_bytes(DType, const SortShape&) {
  return 0;
}

void sort_rows(DType t, const SortShape& s, const void* keys, void* sorted, int64_t* indices,
               void*, size_t, Stream) {
  dispatch_cpu_dtype(t, "sort", [&](auto z) { sort_typed<decltype(z)>(s, keys, sorted, indices); });
}

void scan(ScanOp op, DType t, const ScanShape& s, const void* in, void* out, Stream) {
  dispatch_cpu_dtype(t, "scan", [&](auto z) { scan_typed<decltype(z)>(op, s, in, out); });
}

void cumprod_backward(DType t, const ScanShape& s, const void* x, const void* g, void* dx,
                      Stream) {
  dispatch_float(t, "cumprod_backward", [&](auto z) {
    using T = decltype(z);
    cumprod_backward_typed<T>(s, static_cast<const T*>(x), static_cast<const T*>(g),
                              static_cast<T*>(dx));
  });
}

}  // namespace ember::kernels::cpu

// Reduction CPU kernels. An accumulator type per op (add one element, merge two partials,
// finish), instantiated with the compute type (float for float16 and bfloat16), and one driver:
// many outputs run in parallel over outputs; few outputs with long reductions split each
// reduction into chunks whose partials merge in order.
#include "kernels/kernel_table.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

template <typename T>
using SumType = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// The sum of q[0, n) in S, in eight interleaved partial sums added pairwise at the end: one
// running sum is a chain of n dependent adds (a GlobalAveragePool's 64-element rows ran at a
// fifth of memory speed), eight keep the adder busy and let the compiler use vectors.
template <typename S, typename E>
S sum_run(const E* q, int64_t n) {
  S a[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) a[j] += static_cast<S>(q[i + j]);
  for (; i < n; ++i) a[i % 8] += static_cast<S>(q[i]);
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

template <typename T, typename R>
struct SumAcc {
  SumType<T> s = 0;
  void add(T v, int64_t) { s += static_cast<SumType<T>>(v); }
  template <typename E>
  void add_run(const E* q, int64_t n) { s += sum_run<SumType<T>>(q, n); }
  void merge(const SumAcc& o) { s += o.s; }
  R finish(int64_t) const { return static_cast<R>(s); }
};

template <typename T>
struct MeanAcc {
  double s = 0;
  void add(T v, int64_t) { s += v; }
  template <typename E>
  void add_run(const E* q, int64_t n) { s += sum_run<double>(q, n); }
  void merge(const MeanAcc& o) { s += o.s; }
  T finish(int64_t n) const { return static_cast<T>(s / static_cast<double>(n)); }
};

// Whether Acc adds a contiguous run at once (sums), not element by element (extremes, which need
// each element's index, and Welford's variance).
template <typename Acc, typename T, typename = void>
constexpr bool kAddsRuns = false;
template <typename Acc, typename T>
constexpr bool kAddsRuns<Acc, T, std::void_t<decltype(std::declval<Acc&>().add_run(
                                     std::declval<const T*>(), int64_t{}))>> = true;

// Welford's running mean and sum of squared deviations; Chan et al.'s formula to merge.
template <typename T>
struct VarAcc {
  int64_t n = 0;
  double mean = 0, m2 = 0;
  int64_t correction = 1;
  bool take_sqrt = false;
  void add(T v, int64_t) {
    ++n;
    const double d = v - mean;
    mean += d / static_cast<double>(n);
    m2 += d * (v - mean);
  }
  void merge(const VarAcc& o) {
    if (o.n == 0) return;
    if (n == 0) {
      n = o.n, mean = o.mean, m2 = o.m2;
      return;
    }
    const double d = o.mean - mean;
    const int64_t total = n + o.n;
    mean += d * static_cast<double>(o.n) / static_cast<double>(total);
    m2 += o.m2 + d * d * static_cast<double>(n) * static_cast<double>(o.n) / static_cast<double>(total);
    n = total;
  }
  T finish(int64_t count) const {
    const double v = m2 / static_cast<double>(std::max<int64_t>(count - correction, 0));
    return static_cast<T>(take_sqrt ? std::sqrt(v) : v);
  }
};

// Max (kMax) or min with the index of the first extreme; NaN wins and propagates.
template <typename T, bool kMax, bool kIndex>
struct ExtremeAcc {
  T best{};
  int64_t idx = -1;
  bool better(T v, int64_t i) const {
    if (idx < 0) return i >= 0;
    if (is_nan(best)) return false;
    if (is_nan(v)) return true;
    return kMax ? v > best : v < best;
  }
  void add(T v, int64_t i) {
    if (better(v, i)) best = v, idx = i;
  }
  void merge(const ExtremeAcc& o) {
    if (o.idx >= 0 && better(o.best, o.idx)) best = o.best, idx = o.idx;
  }
  std::conditional_t<kIndex, int64_t, T> finish(int64_t) const {
    if constexpr (kIndex) return idx;
    else return best;
  }
};

// Adds the reduced elements with row-major index in [lo, hi) to `acc`.
template <typename T, typename Acc>
void accumulate(const StridedLoop<1>& loop, const char* base, int64_t lo, int64_t hi, Acc& acc) {
  const int64_t n = loop.inner_size();
  const int64_t st = loop.inner_strides()[0];
  for (int64_t k = lo / n; k * n < hi; ++k) {
    const int64_t i0 = std::max<int64_t>(lo - k * n, 0), i1 = std::min<int64_t>(hi - k * n, n);
    const char* p = base + loop.outer_offsets(k)[0];
    if (st == static_cast<int64_t>(sizeof(T))) {
      const T* q = reinterpret_cast<const T*>(p);
      if constexpr (kAddsRuns<Acc, T>)
        acc.add_run(q + i0, i1 - i0);
      else
        for (int64_t i = i0; i < i1; ++i) acc.add(q[i], k * n + i);
    } else {
      for (int64_t i = i0; i < i1; ++i) acc.add(*reinterpret_cast<const T*>(p + i * st), k * n + i);
    }
  }
}

template <typename T, typename R, typename Acc>
void reduce_driver(const ReduceShape& s, const T* in, R* out, const Acc& init) {
  std::vector<int64_t> red_sizes(s.reduced_sizes, s.reduced_sizes + s.reduced_ndim);
  std::vector<int64_t> red_bytes(s.reduced_strides, s.reduced_strides + s.reduced_ndim);
  for (auto& b : red_bytes) b *= static_cast<int64_t>(sizeof(T));
  const StridedLoop<1> red(red_sizes, {red_bytes});
  const int64_t n_out = s.kept_numel(), n_red = s.reduced_numel();
  const int nd = s.kept_ndim;
  auto base_of = [&](int64_t k) {
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; --d) {
      off += (k % s.kept_sizes[d]) * s.kept_strides[d];
      k /= s.kept_sizes[d];
    }
    return reinterpret_cast<const char*>(in + off);
  };
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const bool big = n_out * n_red >= kParallelGrain && threads > 1;
  if (big && n_out < threads) {
    // Few long reductions: split each into chunks, merge the partials in index order.
    const int64_t chunks = std::min<int64_t>(threads * 4, n_red / 4096 + 1);
    const int64_t len = (n_red + chunks - 1) / chunks;
    std::vector<Acc> part(static_cast<size_t>(chunks), init);
    for (int64_t k = 0; k < n_out; ++k) {
      const char* base = base_of(k);
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < chunks; ++c) {
        part[c] = init;
        accumulate<T>(red, base, c * len, std::min(n_red, (c + 1) * len), part[c]);
      }
      Acc acc = init;
      for (const Acc& p : part) acc.merge(p);
      out[k] = acc.finish(n_red);
    }
    return;
  }
  // Each output's elements one contiguous run (a mean over an image's H x W): summed in place.
  const bool one_run =
      red.outer_count() == 1 && red.inner_strides()[0] == static_cast<int64_t>(sizeof(T));
  // Outputs [k0, k1), their inputs' offsets stepped like an odometer from k0's (a division per
  // output and kept dim cost as much as a GlobalAveragePool's sum of 64 elements).
  auto outputs = [&](int64_t k0, int64_t k1) {
    if (k0 >= k1) return;
    std::vector<int64_t> idx(static_cast<size_t>(nd));
    int64_t rest = k0;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rest % s.kept_sizes[d];
      rest /= s.kept_sizes[d];
    }
    const char* base = base_of(k0);
    for (int64_t k = k0; k < k1; ++k) {
      Acc acc = init;
      if constexpr (kAddsRuns<Acc, T>) {
        if (one_run)
          acc.add_run(reinterpret_cast<const T*>(base), n_red);
        else if (n_red > 0)
          accumulate<T>(red, base, 0, n_red, acc);
      } else if (n_red > 0) {
        accumulate<T>(red, base, 0, n_red, acc);
      }
      out[k] = acc.finish(n_red);
      for (int d = nd - 1; d >= 0; --d) {
        base += s.kept_strides[d] * int64_t{sizeof(T)};
        if (++idx[d] < s.kept_sizes[d]) break;
        base -= s.kept_strides[d] * s.kept_sizes[d] * int64_t{sizeof(T)};
        idx[d] = 0;
      }
    }
  };
  if (!big) return outputs(0, n_out);
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    outputs(n_out * t / nt, n_out * (t + 1) / nt);
  }
}

}  // namespace

size_t reduce_workspace_bytes(ReduceOp, DType, const ReduceShape&) {
  return 0;
}

void reduce(ReduceOp op, DType t, const ReduceShape& s, const void* in_v, void* out, void*,
            Stream) {
  dispatch_cpu_dtype(t, "reduce", [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;  // the accumulators see half types as float
    const T* in = static_cast<const T*>(in_v);
    switch (op) {
      case ReduceOp::sum: {
        using R = std::conditional_t<std::is_floating_point_v<C>, T, int64_t>;
        return reduce_driver(s, in, static_cast<R*>(out), SumAcc<C, R>{});
      }
      case ReduceOp::amax:
        return reduce_driver(s, in, static_cast<T*>(out), ExtremeAcc<C, true, false>{});
      case ReduceOp::amin:
        return reduce_driver(s, in, static_cast<T*>(out), ExtremeAcc<C, false, false>{});
      case ReduceOp::argmax:
        return reduce_driver(s, in, static_cast<int64_t*>(out), ExtremeAcc<C, true, true>{});
      case ReduceOp::argmin:
        return reduce_driver(s, in, static_cast<int64_t*>(out), ExtremeAcc<C, false, true>{});
      default: break;
    }
    if constexpr (std::is_floating_point_v<C>) {
      switch (op) {
        case ReduceOp::mean:
          return reduce_driver(s, in, static_cast<T*>(out), MeanAcc<C>{});
        case ReduceOp::var:
        case ReduceOp::std: {
          VarAcc<C> init;
          init.correction = s.correction;
          init.take_sqrt = op == ReduceOp::std;
          return reduce_driver(s, in, static_cast<T*>(out), init);
        }
        default: break;
      }
    }
    EMBER_THROW(DTypeError, "reduce op ", static_cast<int>(op), ": the cpu kernel has no ",
                dtype_name(t), " version");
  });
}

}  // namespace ember::kernels::cpu

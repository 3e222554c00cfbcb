// Elementwise CPU kernels. Each op is a small functor; one loop template per operand count
// applies it, with the stride-1 and broadcast-scalar cases written out so the compiler
// vectorises them. Every dtype; float16 and bfloat16 compute in float.
#include "kernels/kernel_table.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {
namespace {

template <typename T>
T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp % 2 == 0) ? 1 : -1;
      return 0;
    }
  }
  T result = 1;
  while (exp) {
    if (exp & 1) result = static_cast<T>(result * base);
    exp = static_cast<T>(exp >> 1);
    base = static_cast<T>(base * base);
  }
  return result;
}

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <typename T>
constexpr bool kIsBool = std::is_same_v<T, bool>;

// NaN-propagating maximum/minimum, as torch.maximum/minimum.
template <typename T>
T max_of(T x, T y) {
  if constexpr (kIsFloat<T>) {
    if (std::isnan(x) || std::isnan(y)) return x + y;
  }
  return x > y ? x : y;
}
template <typename T>
T min_of(T x, T y) {
  if constexpr (kIsFloat<T>) {
    if (std::isnan(x) || std::isnan(y)) return x + y;
  }
  return x < y ? x : y;
}

// fmod (truncated division's remainder, the dividend's sign) and remainder (floored division's,
// the divisor's sign), as PyTorch computes them; an integer divisor of 0 gives 0 (ops/ refuses it).
template <typename T>
T fmod_of(T x, T y) {
  if constexpr (kIsFloat<T>) {
    return std::fmod(x, y);
  } else {
    if (y == 0) return 0;
    if constexpr (std::is_signed_v<T>)
      if (y == -1) return 0;  // x % -1 overflows for the most negative x
    return static_cast<T>(x % y);
  }
}
template <typename T>
T remainder_of(T x, T y) {
  const T r = fmod_of(x, y);
  if constexpr (std::is_unsigned_v<T>) {
    return r;
  } else {
    return r != 0 && ((r < 0) != (y < 0)) ? static_cast<T>(r + y) : r;
  }
}

// The byte-strided loop over `index` with a contiguous output of `out_size`-byte elements in
// front of the N inputs of `in_sizes`-byte elements.
template <int N>
StridedLoop<N + 1> loop_of(const StridedIndex<N>& index, int64_t out_size,
                           const std::array<int64_t, N>& in_sizes) {
  const std::vector<int64_t> sizes(index.sizes, index.sizes + index.ndim);
  std::array<std::vector<int64_t>, N + 1> strides;
  strides[0].assign(sizes.size(), 0);
  int64_t step = out_size;
  for (int d = index.ndim - 1; d >= 0; --d) {
    strides[0][d] = step;
    step *= index.sizes[d];
  }
  for (int k = 0; k < N; ++k) {
    strides[k + 1].resize(sizes.size());
    for (int d = 0; d < index.ndim; ++d) strides[k + 1][d] = index.strides[k][d] * in_sizes[k];
  }
  return StridedLoop<N + 1>(sizes, strides);
}

// out = f(a, b) over a strided iteration space.
template <typename R, typename T, typename F>
void binary_loop(const StridedIndex<2>& s, void* out, const void* a, const void* b, F f) {
  const StridedLoop<3> loop = loop_of<2>(s, sizeof(R), {sizeof(T), sizeof(T)});
  std::array<char*, 3> base{static_cast<char*>(out), static_cast<char*>(const_cast<void*>(a)),
                            static_cast<char*>(const_cast<void*>(b))};
  parallel_runs<3>(loop, base, [&](const std::array<char*, 3>& p, const std::array<int64_t, 3>& st,
                                   int64_t n) {
    R* o = reinterpret_cast<R*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    constexpr int64_t r = sizeof(R), t = sizeof(T);
    if (st[0] == r && st[1] == t && st[2] == t) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (st[0] == r && st[1] == t && st[2] == 0) {
      const T yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else if (st[0] == r && st[1] == 0 && st[2] == t) {
      const T xv = *x;
      for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<R*>(p[0] + i * st[0]) = f(*reinterpret_cast<const T*>(p[1] + i * st[1]),
                                                    *reinterpret_cast<const T*>(p[2] + i * st[2]));
    }
  });
}

template <typename R, typename T, typename F>
void binary_contig(int64_t n, void* out, const void* a, const void* b, F f) {
  R* o = static_cast<R*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  parallel_range(n, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) o[i] = f(x[i], y[i]);
  });
}

// Calls run.template operator()<R>(f) with the functor and result type of `op` for T. The
// functors take and return T's compute type: float for the half types, whose loops convert on
// load and round on store.
template <typename T, typename Run>
void with_binary_functor(BinaryOp op, Run&& run) {
  using B = bool;
  using C = compute_t<T>;  // half types compute in float
  switch (op) {
    case BinaryOp::add:
      if constexpr (kIsBool<T>)
        return run(B{}, [](C x, C y) -> C { return x || y; });
      else
        return run(T{}, [](C x, C y) -> C { return static_cast<C>(x + y); });
    case BinaryOp::mul:
      if constexpr (kIsBool<T>)
        return run(B{}, [](C x, C y) -> C { return x && y; });
      else
        return run(T{}, [](C x, C y) -> C { return static_cast<C>(x * y); });
    case BinaryOp::sub:
      if constexpr (!kIsBool<T>)
        return run(T{}, [](C x, C y) -> C { return static_cast<C>(x - y); });
      break;
    case BinaryOp::div:
      if constexpr (kIsFloat<C>) return run(T{}, [](C x, C y) -> C { return x / y; });
      break;
    case BinaryOp::pow:
      if constexpr (kIsFloat<C>)
        return run(T{}, [](C x, C y) -> C { return std::pow(x, y); });
      else if constexpr (!kIsBool<T>)
        return run(T{}, [](C x, C y) -> C { return int_pow(x, y); });
      break;
    case BinaryOp::fmod:
      if constexpr (!kIsBool<T>) return run(T{}, [](C x, C y) -> C { return fmod_of(x, y); });
      break;
    case BinaryOp::remainder:
      if constexpr (!kIsBool<T>) return run(T{}, [](C x, C y) -> C { return remainder_of(x, y); });
      break;
    case BinaryOp::maximum:
      return run(T{}, [](C x, C y) -> C { return max_of(x, y); });
    case BinaryOp::minimum:
      return run(T{}, [](C x, C y) -> C { return min_of(x, y); });
    case BinaryOp::eq:
      return run(B{}, [](C x, C y) -> bool { return x == y; });
    case BinaryOp::ne:
      return run(B{}, [](C x, C y) -> bool { return x != y; });
    case BinaryOp::lt:
      return run(B{}, [](C x, C y) -> bool { return x < y; });
    case BinaryOp::le:
      return run(B{}, [](C x, C y) -> bool { return x <= y; });
    case BinaryOp::gt:
      return run(B{}, [](C x, C y) -> bool { return x > y; });
    case BinaryOp::ge:
      return run(B{}, [](C x, C y) -> bool { return x >= y; });
  }
  EMBER_THROW(DTypeError, "binary op ", static_cast<int>(op), ": the cpu kernel has no ",
              dtype_name(dtype_of<T>()), " version");
}

template <typename T>
T clamp_bound(double v) {
  if constexpr (kIsFloat<T>) {
    return static_cast<T>(v);
  } else {
    // Integer bounds: round inwards and saturate to the type's range.
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::lowest();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

template <typename T, typename Run>
void with_unary_functor(UnaryOp op, const UnaryParams& prm, Run&& run) {
  using C = compute_t<T>;
  if constexpr (!kIsBool<T>) {
    switch (op) {
      case UnaryOp::neg:
        return run([](C x) -> C { return static_cast<C>(-x); });
      case UnaryOp::abs:
        if constexpr (std::is_unsigned_v<T>)
          return run([](C x) -> C { return x; });
        else
          return run([](C x) -> C { return x < 0 ? static_cast<C>(-x) : x; });
      case UnaryOp::clamp: {
        // Integers: lo rounds up, hi rounds down, so the result stays inside [lo, hi]. With
        // lo > hi every element becomes hi (PyTorch's rule). A NaN fails both comparisons and
        // passes through; the branch-free form vectorises (a test for NaN first did not).
        const C hi = clamp_bound<C>(kIsFloat<C> ? prm.hi : std::floor(prm.hi));
        const C lo = std::min(clamp_bound<C>(kIsFloat<C> ? prm.lo : std::ceil(prm.lo)), hi);
        return run([lo, hi](C x) -> C { return clamp_value(x, lo, hi); });
      }
      case UnaryOp::sign:
        return run([](C x) -> C {
          if constexpr (kIsFloat<C>) {
            if (std::isnan(x)) return x;
          }
          return static_cast<C>((C(0) < x) - (x < C(0)));
        });
      case UnaryOp::floor:
      case UnaryOp::ceil:
      case UnaryOp::round:
      case UnaryOp::trunc:
        if constexpr (!kIsFloat<C>) return run([](C x) -> C { return x; });
        break;
      default: break;
    }
    if constexpr (kIsFloat<C>) {
      switch (op) {
        case UnaryOp::floor:
          return run([](C x) -> C { return std::floor(x); });
        case UnaryOp::ceil:
          return run([](C x) -> C { return std::ceil(x); });
        case UnaryOp::round:
          return run([](C x) -> C { return std::nearbyint(x); });
        case UnaryOp::trunc:
          return run([](C x) -> C { return std::trunc(x); });
        case UnaryOp::sin:
          return run([](C x) -> C { return std::sin(x); });
        case UnaryOp::cos:
          return run([](C x) -> C { return std::cos(x); });
        case UnaryOp::erf:
          return run([](C x) -> C { return std::erf(x); });
        case UnaryOp::exp:
          return run([](C x) -> C { return std::exp(x); });
        case UnaryOp::log:
          return run([](C x) -> C { return std::log(x); });
        case UnaryOp::sqrt:
          return run([](C x) -> C { return std::sqrt(x); });
        case UnaryOp::rsqrt:
          return run([](C x) -> C { return C(1) / std::sqrt(x); });
        default: break;
      }
    }
  }
  EMBER_THROW(DTypeError, "unary op ", static_cast<int>(op), ": the cpu kernel has no ",
              dtype_name(dtype_of<T>()), " version");
}

template <typename T, typename F>
void unary_loop(const StridedIndex<1>& s, void* out, const void* a, F f) {
  const StridedLoop<2> loop = loop_of<1>(s, sizeof(T), {sizeof(T)});
  std::array<char*, 2> base{static_cast<char*>(out), static_cast<char*>(const_cast<void*>(a))};
  parallel_runs<2>(loop, base, [&](const std::array<char*, 2>& p, const std::array<int64_t, 2>& st,
                                   int64_t n) {
    if (st[0] == sizeof(T) && st[1] == sizeof(T)) {
      T* o = reinterpret_cast<T*>(p[0]);
      const T* x = reinterpret_cast<const T*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * st[0]) = f(*reinterpret_cast<const T*>(p[1] + i * st[1]));
    }
  });
}

template <typename T, typename F>
void unary_contig(int64_t n, void* out, const void* a, F f) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  parallel_range(n, [&](int64_t lo, int64_t len) {
    // A local copy: the stores through `o` could alias the functor's captured values (clamp's
    // bounds) if read through the reference, which keeps the loop from vectorising.
    const F g = f;
    for (int64_t i = lo; i < lo + len; ++i) o[i] = g(x[i]);
  });
}

template <typename T>
void where_loop(const StridedIndex<3>& s, void* out, const bool* cond, const void* a,
                const void* b) {
  const StridedLoop<4> loop = loop_of<3>(s, sizeof(T), {sizeof(bool), sizeof(T), sizeof(T)});
  std::array<char*, 4> base{static_cast<char*>(out),
                            reinterpret_cast<char*>(const_cast<bool*>(cond)),
                            static_cast<char*>(const_cast<void*>(a)),
                            static_cast<char*>(const_cast<void*>(b))};
  parallel_runs<4>(loop, base, [](const std::array<char*, 4>& p, const std::array<int64_t, 4>& st,
                                  int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const bool c = *reinterpret_cast<const bool*>(p[1] + i * st[1]);
      *reinterpret_cast<T*>(p[0] + i * st[0]) =
          *reinterpret_cast<const T*>(p[c ? 2 : 3] + i * st[c ? 2 : 3]);
    }
  });
}

}  // namespace

void binary_strided(BinaryOp op, DType t, const StridedIndex<2>& shape, void* out, const void* a,
                    const void* b, Stream) {
  dispatch_cpu_dtype(t, "binary op", [&](auto tag) {
    using T = decltype(tag);
    with_binary_functor<T>(op, [&](auto rtag, auto f) {
      binary_loop<decltype(rtag), T>(shape, out, a, b, f);
    });
  });
}

void binary_contiguous(BinaryOp op, DType t, int64_t n, void* out, const void* a, const void* b,
                       Stream) {
  dispatch_cpu_dtype(t, "binary op", [&](auto tag) {
    using T = decltype(tag);
    with_binary_functor<T>(op, [&](auto rtag, auto f) {
      binary_contig<decltype(rtag), T>(n, out, a, b, f);
    });
  });
}

void unary_strided(UnaryOp op, DType t, const UnaryParams& params, const StridedIndex<1>& shape,
                   void* out, const void* a, Stream) {
  dispatch_cpu_dtype(t, "unary op", [&](auto tag) {
    using T = decltype(tag);
    with_unary_functor<T>(op, params, [&](auto f) { unary_loop<T>(shape, out, a, f); });
  });
}

void unary_contiguous(UnaryOp op, DType t, const UnaryParams& params, int64_t n, void* out,
                      const void* a, Stream) {
  dispatch_cpu_dtype(t, "unary op", [&](auto tag) {
    using T = decltype(tag);
    with_unary_functor<T>(op, params, [&](auto f) { unary_contig<T>(n, out, a, f); });
  });
}

void where_strided(DType t, const StridedIndex<3>& shape, void* out, const bool* cond,
                   const void* a, const void* b, Stream) {
  dispatch_cpu_dtype(t, "where", [&](auto tag) { where_loop<decltype(tag)>(shape, out, cond, a, b); });
}

}  // namespace ember::kernels::cpu

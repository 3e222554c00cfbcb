// Helpers shared by the op tests: seeded random tensors in chosen memory layouts, and the
// index arithmetic the naive float64 references need.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace ember::test {

// The message of the ember::Error that f throws ("" when it throws none).
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// EMBER_TEST_SEED=<seed> replays a failure's captured seed (run the one test case, doctest's
// -tc="name").
inline unsigned fresh_seed() {
  if (const char* s = std::getenv("EMBER_TEST_SEED"))
    return static_cast<unsigned>(std::strtoul(s, nullptr, 10));
  return std::random_device{}();
}

// How an operand is laid out in memory; its logical shape and values do not depend on it.
enum class Layout { contiguous, transposed, sliced, expanded };
inline const char* layout_name(Layout l) {
  const char* names[] = {"contiguous", "transposed", "sliced", "expanded"};
  return names[static_cast<int>(l)];
}
inline std::ostream& operator<<(std::ostream& os, Layout l) { return os << layout_name(l); }

// A contiguous tensor of random values in [lo, hi]: integers for integer dtypes (uint8 clips lo
// to 0), 0/1 for bool, and multiples of `step` when step > 0 (to make ties and equal values).
inline Tensor random_tensor(const Shape& shape, DType t, double lo, double hi, std::mt19937& g,
                            double step = 0.0) {
  if (t == kUInt8) lo = std::max(lo, 0.0);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(checked_numel(shape)));
  for (double& x : v) {
    x = u(g);
    if (t == kBool) x = x > (lo + hi) / 2 ? 1.0 : 0.0;
    else if (!is_floating(t)) x = std::round(x);
    else if (step > 0) x = std::round(x / step) * step;
  }
  return from_vector(v, shape).to(t);
}

// A tensor of logical shape `shape` on `device` with the given layout: transposed (last two dims
// swapped in memory), sliced (every other element of a longer last dim) or expanded (dim 0
// broadcast from size 1). The view is taken on the device, so its kernels see the strides; the
// values (for the same generator state) do not depend on the device. Falls back to contiguous
// where the shape does not allow the layout.
inline Tensor random_operand(const Shape& shape, DType t, Layout layout, double lo, double hi,
                             std::mt19937& g, double step = 0.0, Device device = Device()) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (layout == Layout::transposed && nd >= 2) {
    Shape s = shape;
    std::swap(s[nd - 1], s[nd - 2]);
    return random_tensor(s, t, lo, hi, g, step).to(device).transpose(-1, -2);
  }
  if (layout == Layout::sliced && nd >= 1) {
    Shape s = shape;
    s[nd - 1] = 2 * shape[nd - 1] + 1;
    return random_tensor(s, t, lo, hi, g, step).to(device).slice(-1, 1, s[nd - 1], 2);
  }
  if (layout == Layout::expanded && nd >= 1) {
    Shape s = shape;
    s[0] = 1;
    return random_tensor(s, t, lo, hi, g, step).to(device).expand(shape);
  }
  return random_tensor(shape, t, lo, hi, g, step).to(device);
}

inline std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = s[d] == 0 ? 0 : i % s[d];
    if (s[d]) i /= s[d];
  }
  return idx;
}

// Row-major index into a tensor of shape `in` of the element broadcast to output index `out`.
inline int64_t broadcast_source(const std::vector<int64_t>& out, const Shape& in) {
  int64_t lin = 0;
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) lin = lin * in[d] + (in[d] == 1 ? 0 : out[off + d]);
  return lin;
}

// float16's and bfloat16's fraction bits, smallest normal exponent and largest finite value,
// from their definitions (IEEE 754 binary16; float32's top half).
struct HalfFormat {
  int frac, emin;
  double max;
};
inline HalfFormat half_format(DType t) {
  return t == kFloat16 ? HalfFormat{10, -14, 65504.0} : HalfFormat{7, -126, 0x1.fep127};
}

// `v` rounded once to float16 or bfloat16, to nearest even, back as double: a multiple of the
// ulp of v's binade (of the subnormals below the smallest normal), infinity past the largest
// finite value. Computed in double arithmetic, independently of runtime/half.h.
inline double round_to_half(double v, DType t) {
  if (!std::isfinite(v)) return v;
  const HalfFormat f = half_format(t);
  int e;
  std::frexp(std::abs(v), &e);  // |v| = m * 2^e, 1/2 <= m < 1
  const double ulp = std::ldexp(1.0, std::max(e - 1, f.emin) - f.frac);
  double r = std::nearbyint(std::abs(v) / ulp) * ulp;  // ties to even: the default mode
  if (r > f.max) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, v);
}

// The bit pattern of a finite, non-negative float16/bfloat16 value `a` (adjacent values differ
// by 1), from the format's definition.
inline int64_t half_position(double a, DType t) {
  const HalfFormat f = half_format(t);
  if (a < std::ldexp(1.0, f.emin)) return std::llround(a / std::ldexp(1.0, f.emin - f.frac));
  int e;
  std::frexp(a, &e);
  return (e - 1 - f.emin) * (int64_t{1} << f.frac) +
         std::llround(a / std::ldexp(1.0, e - 1 - f.frac));
}

// `v` as stored in dtype t, back as double (integers wrap like a C++ cast, bool is v != 0).
inline double as_stored(double v, DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16:
      return round_to_half(v, t);
    case DType::f32: return static_cast<float>(v);
    case DType::i32: return static_cast<int32_t>(static_cast<int64_t>(v));
    case DType::i64: return static_cast<double>(static_cast<int64_t>(v));
    case DType::u8: return static_cast<uint8_t>(static_cast<int64_t>(v));
    case DType::b8: return v != 0.0;
    default: return v;
  }
}

// got == want up to the rounding of dtype t (exact for integers and bool); NaNs match NaNs.
inline bool close(double got, double want, DType t) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  if (!is_floating(t)) return got == want;
  const double rtol = t == kFloat32 ? 2e-5 : 1e-11, atol = t == kFloat32 ? 1e-5 : 1e-11;
  return std::abs(got - want) <= atol + rtol * std::abs(want);
}

// Checks every element of `got` against `want` (row-major), reporting the first mismatch.
inline void check_values(const Tensor& got, const std::vector<double>& want, DType t) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (!close(g[i], want[i], t)) {
      CAPTURE(i);
      CAPTURE(g[i]);
      CAPTURE(want[i]);
      FAIL_CHECK("value mismatch");
      return;
    }
  }
}

// torch.matmul in float64 loops on row-major values: 1-D operands become a row/column, batch
// dims broadcast. Returns the result's shape and values.
inline std::pair<Shape, std::vector<double>> matmul_reference(const Shape& sa, const std::vector<double>& va,
                                                const Shape& sb, const std::vector<double>& vb) {
  Shape a = sa, b = sb;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  Shape batch(std::max(ab.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t x = i + ab.size() >= batch.size() ? ab[i + ab.size() - batch.size()] : 1;
    const int64_t y = i + bb.size() >= batch.size() ? bb[i + bb.size() - batch.size()] : 1;
    batch[i] = x == 1 ? y : x;
  }
  const int64_t nb = checked_numel(batch);
  std::vector<double> out(static_cast<size_t>(nb * m * n), 0.0);
  for (int64_t i = 0; i < nb; ++i) {
    const auto idx = unravel(i, batch);
    const int64_t ia = broadcast_source(idx, ab), ib = broadcast_source(idx, bb);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double s = 0;
        for (int64_t j = 0; j < k; ++j) s += va[(ia * m + r) * k + j] * vb[(ib * k + j) * n + c];
        out[(i * m + r) * n + c] = s;
      }
  }
  Shape shape = batch;
  if (sa.size() > 1) shape.push_back(m);
  if (sb.size() > 1) shape.push_back(n);
  return {shape, out};
}

// A tensor handle whose storage claims to live on `device` (no memory behind it): enough to
// check that ops reject the device before touching any data.
inline Tensor fake_device_tensor(const Shape& shape, DType t, Device device) {
  auto st = std::make_shared<StorageImpl>();
  st->device = device;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = st;
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = t;
  return Tensor(impl);
}

// Asserts that `what` contains every one of `parts`.
inline void check_message(const std::string& what, std::initializer_list<std::string> parts) {
  for (const auto& p : parts) {
    CAPTURE(what);
    CAPTURE(p);
    CHECK(what.find(p) != std::string::npos);
  }
}

}  // namespace ember::test

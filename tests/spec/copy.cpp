// Copies and casts on every target (tests/spec/spec.h): every pair of dtypes, from every layout,
// into contiguous and strided destinations, and between the host and the target through strided
// views; the expected values are the source's converted in the test (op_test_util.h's as_stored:
// floats truncate toward zero into integers, which wrap like a C++ cast; bool is v != 0), and the
// float16/bfloat16 conversions of every bit pattern against the formats' definitions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "spec/spec.h"

namespace ember::test {
namespace {

std::vector<double> converted(const std::vector<double>& v, DType to) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = as_stored(v[i], to);
  return out;
}

float float_of_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits_of_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The value of float16 bit pattern b, decoded from the IEEE 754 binary16 definition: 1 sign
// bit, 5 exponent bits (bias 15), 10 fraction bits; exponent 0 is subnormal, 31 inf/NaN.
double half_value(uint16_t b) {
  const int sign = b >> 15, e = (b >> 10) & 31, m = b & 1023;
  const double mag = e == 0    ? std::ldexp(m, -24)
                     : e == 31 ? (m ? std::numeric_limits<double>::quiet_NaN()
                                    : std::numeric_limits<double>::infinity())
                               : std::ldexp(1024 + m, e - 25);
  return sign ? -mag : mag;
}
// bfloat16 is the top half of a float32.
double bf16_value(uint16_t b) {
  return float_of_bits(static_cast<uint32_t>(b) << 16);
}

// The nearest-even rounding of finite f to the format whose non-negative finite patterns, in
// increasing order, decode to `pos` (value(p) for p = 0, 1, ...): the nearest of the two
// neighbours, the even pattern on a tie, infinity at or past the overflow midpoint.
double round_by_search(float f, const std::vector<double>& pos) {
  const double a = std::abs(static_cast<double>(f));
  const double top = pos.back(), half_ulp = (pos.back() - pos[pos.size() - 2]) / 2;
  double r;
  if (a >= top + half_ulp) {
    r = std::numeric_limits<double>::infinity();
  } else {
    const size_t hi =
        static_cast<size_t>(std::lower_bound(pos.begin(), pos.end(), a) - pos.begin());
    if (hi < pos.size() && pos[hi] == a) {
      r = a;
    } else if (hi >= pos.size()) {
      r = top;
    } else {
      const double lo_v = pos[hi - 1], hi_v = pos[hi];
      r = a - lo_v < hi_v - a   ? lo_v
          : hi_v - a < a - lo_v ? hi_v
                                : ((hi - 1) % 2 == 0 ? lo_v : hi_v);
    }
  }
  return std::signbit(f) ? -r : r;
}

}  // namespace

TEST_CASE("float16 and bfloat16 casts are exact on every target: all 65536 patterns both ways") {
  // float16 -> float32: every pattern, against the definition (NaNs stay NaN with their sign).
  std::vector<uint16_t> bits(65536);
  for (uint32_t b = 0; b < 65536; ++b) bits[b] = static_cast<uint16_t>(b);
  // float32 -> float16/bfloat16: the float32 values of every half pattern, the midpoints
  // between neighbours (ties to even) and a quarter-step either side of them, the overflow edge
  // (65520 -> inf in float16), values under the smallest subnormal, and random floats.
  std::vector<double> pos16, pos_bf;
  for (uint32_t b = 0; b < 0x7c00; ++b) pos16.push_back(half_value(static_cast<uint16_t>(b)));
  for (uint32_t b = 0; b < 0x7f80; ++b) pos_bf.push_back(bf16_value(static_cast<uint16_t>(b)));
  std::vector<float> probes = {65504.0f,
                               65519.0f,
                               65520.0f,
                               65536.0f,
                               1e30f,
                               std::ldexp(1.0f, -25),
                               std::ldexp(3.0f, -26),
                               std::ldexp(1.0f, -26),
                               std::numeric_limits<float>::denorm_min(),
                               0.0f,
                               std::numeric_limits<float>::max(),
                               3.3895314e38f,
                               3.3961775e38f};
  for (const std::vector<double>* pos : {&pos16, &pos_bf})
    for (size_t i = 0; i + 1 < pos->size(); i += 7) {
      const double lo = (*pos)[i], hi = (*pos)[i + 1], mid = (lo + hi) / 2, q = (hi - lo) / 4;
      for (double v : {lo, mid, mid - q, mid + q}) probes.push_back(static_cast<float>(v));
    }
  std::mt19937 g(fresh_seed());
  for (int k = 0; k < 20000; ++k) probes.push_back(float_of_bits(static_cast<uint32_t>(g())));
  const size_t n0 = probes.size();
  for (size_t i = 0; i < n0; ++i) probes.push_back(-probes[i]);
  probes.push_back(std::numeric_limits<float>::infinity());
  probes.push_back(-std::numeric_limits<float>::infinity());
  probes.push_back(std::numeric_limits<float>::quiet_NaN());
  const Shape np{static_cast<int64_t>(probes.size())};
  for_each_target([&](Device dev) {
    for (DType t : {kFloat16, kBFloat16}) {
      CAPTURE(t);
      const std::vector<float> got =
          from_host(bits.data(), {65536}, t).to(dev).to(kFloat32).to_vector<float>();
      int64_t widen_bad = 0, narrow_bad = 0;
      for (uint32_t b = 0; b < 65536; ++b) {
        const double want = t == kFloat16 ? half_value(static_cast<uint16_t>(b))
                                          : bf16_value(static_cast<uint16_t>(b));
        const bool ok = std::isnan(want)
                            ? std::isnan(got[b]) && std::signbit(got[b]) == (b >> 15)
                            : bits_of_float(got[b]) == bits_of_float(static_cast<float>(want));
        if (!ok && widen_bad++ == 0) {
          CAPTURE(b);
          CAPTURE(got[b]);
          FAIL_CHECK("widening mismatch (the first)");
        }
      }
      CHECK(widen_bad == 0);
      const std::vector<double> narrowed =
          from_host(probes.data(), np, kFloat32).to(dev).to(t).to(kFloat64).to_vector<double>();
      const std::vector<double>& pos = t == kFloat16 ? pos16 : pos_bf;
      for (size_t i = 0; i < probes.size(); ++i) {
        const float f = probes[i];
        const double want = std::isnan(f) ? f : std::isinf(f) ? f : round_by_search(f, pos);
        const bool ok = std::isnan(want) ? std::isnan(narrowed[i])
                                         : narrowed[i] == want &&
                                               std::signbit(narrowed[i]) == std::signbit(want);
        if (!ok && narrow_bad++ == 0) {
          CAPTURE(f);
          CAPTURE(narrowed[i]);
          CAPTURE(want);
          FAIL_CHECK("rounding mismatch (the first)");
        }
      }
      CHECK(narrow_bad == 0);
      CHECK(probes.size() > 40000);
    }
  });
}

TEST_CASE("copies and casts between layouts and dtypes on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const DType dtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
  for_each_target([&](Device dev) {
    for (DType from : dtypes) {
      for (DType to : dtypes) {
        for (Layout l :
             {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::expanded}) {
          CAPTURE(from);
          CAPTURE(to);
          CAPTURE(l);
          // Values in [0, 200]: every dtype holds them, so the conversion rules, not overflow,
          // decide each result.
          const Tensor x = random_operand({3, 5, 4}, from, l, 0, 200, g, 0.0, dev);
          const std::vector<double> want = converted(x.to_vector<double>(), to);
          check_result(x.to(to), dev, to, {3, 5, 4}, want);
          // Into a strided destination on the target.
          Tensor dst = zeros({4, 5, 3}, {to, dev}).permute({2, 1, 0});
          dst.copy_(x);
          check_result(dst, dev, to, {3, 5, 4}, want);
        }
      }
    }
    // Host <-> target copies into and out of strided views.
    const Tensor h = random_tensor({6, 7}, kFloat64, -1, 1, g);
    const std::vector<double> hv = h.to_vector<double>();
    Tensor d = zeros({7, 6}, {kFloat32, dev}).t();
    d.copy_(h);
    check_result(d, dev, kFloat32, {6, 7}, converted(hv, kFloat32));
    Tensor back = zeros({6, 7}, kFloat64);
    back.slice(1, 0, 7, 2).copy_(d.slice(1, 0, 7, 2));
    const std::vector<double> bv = back.to_vector<double>();
    for (size_t i = 0; i < bv.size(); ++i) {
      CAPTURE(i);
      CHECK(bv[i] == (i % 7 % 2 == 0 ? as_stored(hv[i], kFloat32) : 0.0));
    }
    check_result(d.contiguous(), dev, kFloat32, {6, 7}, converted(hv, kFloat32));
    CHECK(zeros({0, 3}, {kFloat32, dev}).to(kInt64).numel() == 0);
  });
}

TEST_CASE("casts of negative and fractional values on every target") {
  for_each_target([&](Device dev) {
    const Tensor x = from_vector<double>({-2.75, -0.5, 0.0, 0.5, 2.75, 127.9}).to(dev);
    check_result(x.to(kInt32), dev, kInt32, {6}, {-2, 0, 0, 0, 2, 127});
    check_result(x.to(kInt64), dev, kInt64, {6}, {-2, 0, 0, 0, 2, 127});
    check_result(x.to(kBool), dev, kBool, {6}, {1, 1, 0, 1, 1, 1});
    check_result(x.to(kFloat32).to(kInt64), dev, kInt64, {6}, {-2, 0, 0, 0, 2, 127});
    const Tensor i = from_vector<int64_t>({-3, 0, 7, 255, 256}).to(dev);
    check_result(i.to(kUInt8), dev, kUInt8, {5}, {253, 0, 7, 255, 0});
    check_result(i.to(kFloat32), dev, kFloat32, {5}, {-3, 0, 7, 255, 256});
  });
}

}  // namespace ember::test

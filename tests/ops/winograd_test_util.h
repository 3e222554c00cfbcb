// What the Winograd tests share (tests/ops on the cpu, tests/cuda on emu and cuda): exact
// rational arithmetic to check the transform tables, and the relative RMS error of a forced
// Winograd run against the float64 loops of conv_test_util.h.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/winograd_math.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "ops/op_test_util.h"

namespace ember::test {

inline const char* const kWinograd[] = {"winograd_f2x2_3x3", "winograd_f4x4_3x3"};

// The Winograd algorithms that run on `dev`: both tiles everywhere, and the fused F(2x2, 3x3)
// on the GPU backends.
inline std::vector<std::string> winograd_algos(Device dev) {
  std::vector<std::string> out(std::begin(kWinograd), std::end(kWinograd));
  if (dev.is_gpu_like()) out.push_back("winograd_f2x2_3x3_fused");
  return out;
}

// A fraction num / den in lowest terms, for running kernels/winograd_math.h's transforms (which
// are templates on the element type) exactly.
struct Rational {
  int64_t num = 0, den = 1;

  Rational() = default;
  Rational(int64_t n, int64_t d) : num(n), den(d) { normalise(); }
  // A table coefficient: the fraction with the smallest denominator (at most 1000) whose
  // correctly rounded double is c. Fails the test when there is none.
  // (The operations are out of line: the transforms' unrolled loops would otherwise inline
  // every gcd, and the test would take minutes to compile.)
  __attribute__((noinline)) explicit Rational(double c) {
    for (int64_t d = 1; d <= 1000; ++d) {
      const double n = std::round(c * static_cast<double>(d));
      if (n / static_cast<double>(d) == c) {
        num = static_cast<int64_t>(n), den = d;
        normalise();
        return;
      }
    }
    FAIL("no small fraction rounds to the coefficient ", c);
  }
  __attribute__((noinline)) void normalise() {
    if (den < 0) num = -num, den = -den;
    const int64_t g = std::gcd(num < 0 ? -num : num, den);
    if (g > 1) num /= g, den /= g;
  }
  __attribute__((noinline)) Rational& operator+=(const Rational& o) {
    *this = Rational(num * o.den + o.num * den, den * o.den);
    return *this;
  }
  friend Rational operator*(const Rational& a, const Rational& b) { return a.times(b); }
  __attribute__((noinline)) Rational times(const Rational& b) const {
    return Rational(num * b.num, den * b.den);
  }
  friend bool operator==(const Rational& a, const Rational& b) {
    return a.num == b.num && a.den == b.den;
  }
};
inline std::ostream& operator<<(std::ostream& os, const Rational& r) {
  return os << r.num << "/" << r.den;
}

// How much F(M x M, 3 x 3)'s transforms can amplify rounding, relative to a direct sum: the
// largest output of the transforms run on magnitudes, |A^T| [(|G| 1 |G|^T) (.) (|B^T| 1 |B|)] |A|
// (all-ones filter and tile), over the direct sum's 9. About 7.1 for F(2x2), 97 for F(4x4) on
// 0, +-1, 1/2, -2. A per-element tolerance is the direct sum's bound times this.
template <int M>
double winograd_error_growth() {
  using W = kernels::Winograd<M>;
  constexpr int A = M + 2;
  double u[A][A], v[A][A], y = 0;
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < A; ++j) {
      double gi = 0, gj = 0, bi = 0, bj = 0;
      for (int k = 0; k < 3; ++k) gi += std::abs(W::g(i, k)), gj += std::abs(W::g(j, k));
      for (int k = 0; k < A; ++k) bi += std::abs(W::bt(i, k)), bj += std::abs(W::bt(j, k));
      u[i][j] = gi * gj, v[i][j] = bi * bj;
    }
  for (int p = 0; p < M; ++p)
    for (int q = 0; q < M; ++q) {
      double s = 0;
      for (int i = 0; i < A; ++i)
        for (int j = 0; j < A; ++j)
          s += std::abs(W::at(p, i)) * u[i][j] * v[i][j] * std::abs(W::at(q, j));
      y = std::max(y, s);
    }
  return y / 9;
}

// The growth for a registry name: 1 for the algorithms that sum directly.
inline double conv_error_growth(const std::string& algo) {
  if (algo == "winograd_f2x2_3x3" || algo == "winograd_f2x2_3x3_fused")
    return winograd_error_growth<2>();
  if (algo == "winograd_f4x4_3x3") return winograd_error_growth<4>();
  return 1.0;
}

// Relative RMS error, rms(got - want) / rms(want).
inline double rel_rms(const std::vector<double>& got, const std::vector<double>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += (got[i] - want[i]) * (got[i] - want[i]);
    ref += want[i] * want[i];
  }
  return ref > 0 ? std::sqrt(err / ref) : std::sqrt(err);
}

// The error of `algo` (forced) in float32 on `dev`, forward and backward-data, for a 3x3 stride-1
// padding-1 convolution of n x c x hw x hw with k filters, uniform [-1, 1) data, against the
// float64 loops. requires: the caller's ConvPolicyGuard.
struct WinogradErrors {
  double forward = 0, backward_data = 0;
};
inline WinogradErrors winograd_errors(Device dev, const std::string& algo, int64_t n, int64_t c,
                                      int64_t hw, int64_t k, std::mt19937& g) {
  const ConvCase cs{"error budget", n, c, hw, hw, k, 3, 3, conv_params(1, 1, 1, 1, 1, 1, 1)};
  const Shape xs{n, c, hw, hw}, ws{k, c, 3, 3}, ys{n, k, hw, hw};
  const Tensor x = random_tensor(xs, kFloat32, -1, 1, g).to(dev);
  const Tensor w = random_tensor(ws, kFloat32, -1, 1, g).to(dev);
  const Tensor dy = random_tensor(ys, kFloat32, -1, 1, g).to(dev);
  const ConvRef ref = conv_reference(cs, x.to_vector<double>(), w.to_vector<double>(), {},
                                     dy.to_vector<double>(), hw, hw);
  ops::set_conv_algo(algo);
  WinogradErrors e;
  e.forward = rel_rms(ops::conv2d(x, w, Tensor(), cs.p).to_vector<double>(), ref.y);
  e.backward_data = rel_rms(ops::conv2d_backward_data(dy, w, xs, cs.p).to_vector<double>(), ref.dx);
  ops::set_conv_algo("");
  return e;
}

// Checks both directions' errors against the budget (F(2x2): 1e-6, F(4x4): 6e-6) and prints
// them with their margin, for docs/conv.md.
inline void check_winograd_budget(Device dev, const std::string& algo, int64_t n, int64_t c,
                                  int64_t hw, int64_t k, std::mt19937& g) {
  const double budget = algo == "winograd_f4x4_3x3" ? 6e-6 : 1e-6;
  const WinogradErrors e = winograd_errors(dev, algo, n, c, hw, k, g);
  std::printf(
      "%s %s N%lld C%lld %lldx%lld K%lld: rel RMS forward %.2e, backward-data %.2e "
      "(budget %.0e: margin %.1fx, %.1fx)\n",
      dev.str().c_str(), algo.c_str(), static_cast<long long>(n), static_cast<long long>(c),
      static_cast<long long>(hw), static_cast<long long>(hw), static_cast<long long>(k), e.forward,
      e.backward_data, budget, budget / e.forward, budget / e.backward_data);
  CAPTURE(algo);
  CAPTURE(c);
  CHECK(e.forward <= budget);
  CHECK(e.backward_data <= budget);
  CHECK(e.forward > 0);  // float32 rounding happened: the run was not a float64 one
}

// Every Winograd algorithm of `dev` (forced) in float64, forward and backward-data, on the
// 3x3 stride-1 case `cs` (its padding 0 to 2) filled with integers in [-3, 3], against the
// float64 loops: F(2x2, 3x3), fused or not, bit for bit (its coefficients are dyadic, so even
// FMA contraction is exact), F(4x4, 3x3) within 1e-10. requires: the caller's ConvPolicyGuard.
inline void check_winograd_integers(Device dev, const ConvCase& cs, std::mt19937& gen) {
  std::uniform_int_distribution<int> small(-3, 3);
  const Shape xs{cs.n, cs.c, cs.h, cs.w}, ws{cs.k, cs.c, 3, 3};
  const Shape ys = ops::conv2d_output_shape(xs, ws, cs.p);
  std::vector<double> xv(checked_numel(xs)), wv(checked_numel(ws)), dyv(checked_numel(ys));
  for (std::vector<double>* v : {&xv, &wv, &dyv})
    for (double& e : *v) e = small(gen);
  const ConvRef ref = conv_reference(cs, xv, wv, {}, dyv, ys[2], ys[3]);
  const Tensor x = from_vector(xv, xs, dev), w = from_vector(wv, ws, dev);
  const Tensor dy = from_vector(dyv, ys, dev);
  auto check = [](const char* what, const std::vector<double>& got, const std::vector<double>& want,
                  bool exact) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i)
      if (exact ? got[i] != want[i] : std::abs(got[i] - want[i]) > 1e-10)
        FAIL_CHECK(what, " element ", i, ": got ", got[i], ", want ", want[i]);
  };
  for (const std::string& algo : winograd_algos(dev)) {
    CAPTURE(algo);
    CAPTURE(cs.p.padding[0]);
    ops::set_conv_algo(algo);
    const bool exact = algo != "winograd_f4x4_3x3";
    check("forward", ops::conv2d(x, w, Tensor(), cs.p).to_vector<double>(), ref.y, exact);
    check("backward-data", ops::conv2d_backward_data(dy, w, xs, cs.p).to_vector<double>(), ref.dx,
          exact);
  }
  ops::set_conv_algo("");
}

}  // namespace ember::test

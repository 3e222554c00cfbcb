// Winograd convolution beyond the case table of tests/spec/conv2d.cpp: the transform tables
// reproduce correlation exactly (in rationals, and on small integers in float64 on the cpu), the
// float32 error stays within its budget, and what the algorithms refuse they refuse with the
// reason — the selector never picks them there, and forcing them there is an error that says why.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/winograd_math.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"
#include "ops/op_test_util.h"
#include "ops/winograd_test_util.h"

namespace ember::test {
namespace {

using ops::ConvDirection;

// One alpha x alpha tile d and a 3 x 3 filter g of small integers through the three transforms,
// in element type T, against the direct correlation y[i][j] = sum d[i + r][j + s] g[r][s].
template <int M, typename T>
void check_one_tile(std::mt19937& gen) {
  constexpr int A = M + 2;
  std::uniform_int_distribution<int> small(-4, 4);
  T d[A][A], g[3][3], u[A][A], v[A][A], m[A][A], y[M][M];
  int64_t di[A][A], gi[3][3];
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < A; ++j) di[i][j] = small(gen), d[i][j] = T(double(di[i][j]));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) gi[i][j] = small(gen), g[i][j] = T(double(gi[i][j]));
  kernels::winograd_filter_transform<M>(g, u);
  kernels::winograd_input_transform<M>(d, v);
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < A; ++j) m[i][j] = u[i][j] * v[i][j];
  kernels::winograd_output_transform<M>(m, y);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < M; ++j) {
      int64_t want = 0;
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) want += di[i + r][j + s] * gi[r][s];
      CAPTURE(i);
      CAPTURE(j);
      if constexpr (std::is_same_v<T, Rational>) {
        CHECK(y[i][j] == Rational(want, 1));
      } else if (M == 2) {
        CHECK(y[i][j] == double(want));  // every coefficient is dyadic: no rounding at all
      } else {
        // 1/3 and 1/15 round in binary: integers up to rounding.
        CHECK(std::abs(y[i][j] - double(want)) <= 1e-12);
      }
    }
}

}  // namespace

TEST_CASE("winograd: the tables reproduce correlation exactly (rationals) and in float64") {
  std::mt19937 gen(fresh_seed());
  for (int rep = 0; rep < 50; ++rep) {
    check_one_tile<2, Rational>(gen);
    check_one_tile<4, Rational>(gen);
    check_one_tile<2, double>(gen);
    check_one_tile<4, double>(gen);
  }
}

TEST_CASE("winograd: whole convolutions of small integers in float64 on the cpu") {
  ConvPolicyGuard guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  // Edge tiles on both sides, every padding, and 13 channels / 6 filters off the multiples of 8.
  for (int64_t pad : {0, 1, 2})
    check_winograd_integers(
        kCPU, {"integers", 2, 13, 9, 11, 6, 3, 3, conv_params(1, 1, pad, pad, 1, 1, 1)}, gen);
}

TEST_CASE("winograd: float32 error within budget on the cpu (C = 64 and 256)") {
  ConvPolicyGuard guard;
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  for (const char* algo : kWinograd)
    for (int64_t c : {64, 256}) check_winograd_budget(kCPU, algo, 2, c, 16, 16, gen);
}

TEST_CASE("winograd: refuses what it cannot compute, with the reason; never chosen there") {
  ConvPolicyGuard guard;
  struct Refused {
    const char* name;
    Shape w;
    ops::Conv2dParams p;
    DType t;
    ConvDirection d;
    const char* reason;
  };
  constexpr ConvDirection fwd = ConvDirection::forward, bwd_data = ConvDirection::backward_data,
                          bwd_filter = ConvDirection::backward_filter;
  // clang-format off
  const Refused cases[] = {
      {"stride 2", {4, 6, 3, 3}, conv_params(2, 2, 1, 1, 1, 1, 1), kFloat32, fwd,
       "stride 1 only, got 2x2"},
      {"dilation 2", {4, 6, 3, 3}, conv_params(1, 1, 2, 2, 2, 2, 1), kFloat32, fwd,
       "dilation 1 only, got 2x2"},
      {"5x5", {4, 6, 5, 5}, conv_params(1, 1, 2, 2, 1, 1, 1), kFloat32, fwd,
       "3x3 filters only, got 5x5"},
      {"groups 2", {4, 3, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 2), kFloat32, bwd_data,
       "groups 1 only, got 2"},
      {"padding 3", {4, 6, 3, 3}, conv_params(1, 1, 3, 3, 1, 1, 1), kFloat64, bwd_data,
       "padding 0 to 2 only"},
      {"backward-filter", {4, 6, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1), kFloat32, bwd_filter,
       "backward-filter is not implemented"},
      {"int32", {4, 6, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1), kInt32, fwd,
       "float32 and float64 only"},
  };
  // clang-format on

  // A big layer, where Winograd is the cheapest wherever it applies: the heuristic would pick it.
  const Shape xs{8, 6, 64, 64};
  for (const Device dev : {kCPU, Device::parse("emu:0")})
    for (const Refused& r : cases) {
      CAPTURE(r.name);
      CAPTURE(dev);
      const ops::ConvKey key = ops::conv2d_key(r.d, xs, r.w, r.t, dev, r.p);
      const ops::ConvSelection sel = ops::explain_conv_algos(key);
      CHECK(sel.chosen.rfind("winograd", 0) != 0);
      for (const ops::ConvCandidate& c : sel.candidates)
        if (c.name.rfind("winograd", 0) == 0) {
          CHECK_FALSE(c.supported);
          check_message(c.reason, {"not supported", r.reason});
        }
    }
}

TEST_CASE("winograd: forcing it onto a shape it refuses is an error naming it, the shape and why") {
  ConvPolicyGuard guard;
  const Tensor x = ones({2, 3, 9, 9}), w5 = ones({4, 3, 5, 5}), w3 = ones({4, 3, 3, 3});
  for (const char* algo : kWinograd) {
    ops::set_conv_algo(algo);
    try {
      ops::conv2d(x, w5, Tensor(), conv_params(1, 1, 2, 2, 1, 1, 1));
      FAIL("expected a ValueError");
    } catch (const ValueError& e) {
      check_message(e.what(),
                    {algo, "cannot run it", "3x3 filters only, got 5x5", "N2 C3 H9 W9 K4 R5 S5"});
    }
    try {
      ops::conv2d(x, w3, Tensor(), conv_params(2, 2, 1, 1, 1, 1, 1));
      FAIL("expected a ValueError");
    } catch (const ValueError& e) {
      check_message(e.what(), {algo, "stride 1 only, got 2x2"});
    }
    try {
      const Tensor dy = ones({2, 4, 9, 9});
      ops::conv2d_backward_filter(dy, x, w3.shape(), conv_params(1, 1, 1, 1, 1, 1, 1));
      FAIL("expected a ValueError");
    } catch (const ValueError& e) {
      check_message(e.what(), {algo, "backward-filter is not implemented"});
    }
  }
}

TEST_CASE("winograd: the heuristic's choice on the cpu follows the measured costs") {
  ConvPolicyGuard guard;
  auto chosen = [](const Shape& xs, const Shape& ws, DType t) {
    return ops::explain_conv_algos(ops::conv2d_key(ConvDirection::forward, xs, ws, t, kCPU,
                                                   conv_params(1, 1, 1, 1, 1, 1, 1)))
        .chosen;
  };
  // float64 (no implicit_gemm on the cpu): F(4x4) on many tiles, not on a 1-channel image, and
  // F(2x2) rather than F(4x4) where 256 x 256 filters share few tiles.
  CHECK(chosen({8, 64, 32, 32}, {64, 64, 3, 3}, kFloat64) == "winograd_f4x4_3x3");
  CHECK(chosen({8, 1, 32, 32}, {16, 1, 3, 3}, kFloat64).rfind("winograd", 0) != 0);
  CHECK(chosen({8, 256, 8, 8}, {256, 256, 3, 3}, kFloat64) != "winograd_f4x4_3x3");
  // The filter costs tell F(2x2) from F(4x4) where filters are many and tiles few.
  const ops::ConvKey few = ops::conv2d_key(ConvDirection::forward, {1, 256, 8, 8}, {256, 256, 3, 3},
                                           kFloat32, kCPU, conv_params(1, 1, 1, 1, 1, 1, 1));
  double f2 = 0, f4 = 0;
  for (const ops::ConvCandidate& c : ops::explain_conv_algos(few).candidates) {
    if (c.name == "winograd_f2x2_3x3") f2 = c.cost;
    if (c.name == "winograd_f4x4_3x3") f4 = c.cost;
  }
  CHECK(f2 < f4);
}

}  // namespace ember::test

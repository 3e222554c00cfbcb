// Philox4x32-10 known answers and the distributions built on it.
#include <doctest/doctest.h>

#include <cmath>

#include "runtime/philox.h"
#include "runtime/rng.h"

using namespace ember;

TEST_CASE("Philox4x32-10 known-answer vectors") {
  // From the Random123 distribution's kat_vectors (philox4x32 10 rounds).
  Philox4 a = philox4x32_10(0, 0, 0, 0, 0, 0);
  CHECK(a.v[0] == 0x6627e8d5u);
  CHECK(a.v[1] == 0xe169c58du);
  CHECK(a.v[2] == 0xbc57ac4cu);
  CHECK(a.v[3] == 0x9b00dbd8u);
  Philox4 b = philox4x32_10(0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu,
                            0xffffffffu);
  CHECK(b.v[0] == 0x408f276du);
  CHECK(b.v[1] == 0x41c83b0eu);
  CHECK(b.v[2] == 0xa20bc7c6u);
  CHECK(b.v[3] == 0x6d5451fdu);
  Philox4 c = philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u,
                            0x299f31d0u);
  CHECK(c.v[0] == 0xd16cfe09u);
  CHECK(c.v[1] == 0x94fdccebu);
  CHECK(c.v[2] == 0x5001e420u);
  CHECK(c.v[3] == 0x24126ea1u);
}

TEST_CASE("fills are reproducible from the seed and consume the stream in order") {
  Generator g1(1234), g2(1234);
  Tensor a = rand({10}, kFloat64, &g1);
  Tensor b = rand({10}, kFloat64, &g2);
  CHECK(a.to_vector<double>() == b.to_vector<double>());
  CHECK(g1.offset() == 3);  // ceil(10 / 4) blocks
  // Element i uses lane i % 4 of block i / 4, starting at the generator's offset.
  Generator g3(1234);
  g3.set_state(1234, 3);
  std::vector<double> next = rand({4}, kFloat64, &g3).to_vector<double>();
  Philox4 blk = philox4x32_10(3, 0, 0, 0, 1234, 0);
  for (int i = 0; i < 4; ++i) CHECK(next[i] == static_cast<double>(blk.v[i] >> 8) / 16777216.0);
  Generator g4(99);
  CHECK(rand({10}, kFloat64, &g4).to_vector<double>() != a.to_vector<double>());
  manual_seed(7);
  Tensor x = rand({5});
  manual_seed(7);
  CHECK(rand({5}).to_vector<float>() == x.to_vector<float>());
}

TEST_CASE("distribution moments") {
  Generator g(2024);
  const int64_t n = 200000;
  auto moments = [](const std::vector<double>& v) {
    double m = 0, s = 0;
    for (double x : v) m += x;
    m /= v.size();
    for (double x : v) s += (x - m) * (x - m);
    return std::make_pair(m, std::sqrt(s / (v.size() - 1)));
  };
  Tensor u = empty({n}, kFloat64);
  uniform_(u, -2.0, 4.0, &g);
  auto uv = u.to_vector<double>();
  for (double x : uv) REQUIRE((x >= -2.0 && x < 4.0));
  auto [um, us] = moments(uv);
  CHECK(um == doctest::Approx(1.0).epsilon(0.01));
  CHECK(us == doctest::Approx(6.0 / std::sqrt(12.0)).epsilon(0.01));

  Tensor z = empty({n}, kFloat32);
  normal_(z, 3.0, 0.5, &g);
  auto [zm, zs] = moments(z.to_vector<double>());
  CHECK(std::fabs(zm - 3.0) < 0.01);
  CHECK(zs == doctest::Approx(0.5).epsilon(0.01));

  Tensor bern = empty({n}, kBool);
  bernoulli_(bern, 0.3, &g);
  double ones = 0;
  for (bool v : bern.to_vector<bool>()) ones += v;
  CHECK(ones / n == doctest::Approx(0.3).epsilon(0.02));

  Tensor ints = empty({4}, kInt32);
  CHECK_THROWS_AS(uniform_(ints), DTypeError);
  CHECK_THROWS_AS(bernoulli_(bern, 1.5), ValueError);
}

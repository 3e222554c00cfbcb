// Batch norm's running statistics by hand and dropout's mask against references written here, on
// fresh random inputs, odd shapes and strided views. (Batch norm, linear, activations, softmax
// and the losses on every device: tests/spec.)
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/batch_norm.h"
#include "autograd/dropout.h"
#include "autograd/linear.h"
#include "op_test_util.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "runtime/rng.h"

using namespace ember;
using namespace ember::test;

namespace {

const DType kFloatTypes[] = {kFloat32, kFloat64};

}  // namespace

TEST_CASE("batch_norm running statistics by hand") {
  // One channel, values 1 and 3: mean 2, biased variance 1, unbiased variance 2.
  Tensor x = from_vector<double>({1, 3}, {2, 1});
  Tensor rm = from_vector<double>({0.0}), rv = from_vector<double>({1.0});
  Tensor y = batch_norm(x, Tensor(), Tensor(), rm, rv, true, 0.1, 1e-5);
  CHECK(rm.item() == doctest::Approx(0.2));  // 0.9 * 0 + 0.1 * 2
  CHECK(rv.item() == doctest::Approx(1.1));  // 0.9 * 1 + 0.1 * 2
  CHECK(y.to_vector<double>()[0] == doctest::Approx(-1 / std::sqrt(1 + 1e-5)));
  // Training without running statistics is allowed; a 0-size batch leaves them alone.
  CHECK(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true).shape() == Shape{2, 1});
  Tensor empty_x = zeros({0, 1, 3}, kFloat64);
  CHECK(batch_norm(empty_x, Tensor(), Tensor(), rm, rv, true).numel() == 0);
  CHECK(rm.item() == doctest::Approx(0.2));
}

TEST_CASE("dropout draws its mask as a bernoulli fill of 1 - p") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (DType t : kFloatTypes)
    for (double p : {0.1, 0.5, 0.8}) {
      CAPTURE(t);
      CAPTURE(p);
      Tensor x = random_operand({37, 41}, t, Layout::transposed, -2, 2, g);
      Generator gen(seed), ref_gen(seed);
      gen.set_state(seed, 7);
      ref_gen.set_state(seed, 7);
      Tensor y = dropout(x, p, true, &gen);
      Tensor mask = zeros(x.shape(), kFloat64);
      bernoulli_(mask, 1 - p, &ref_gen);
      CHECK(gen.offset() == ref_gen.offset());
      const std::vector<double> xv = x.to_vector<double>(), mv = mask.to_vector<double>();
      std::vector<double> want(xv.size());
      double kept = 0;
      for (size_t i = 0; i < xv.size(); ++i) {
        want[i] = mv[i] != 0 ? xv[i] / (1 - p) : 0.0;
        kept += mv[i];
      }
      check_values(y, want, t);
      CHECK(kept / xv.size() == doctest::Approx(1 - p).epsilon(0.1));
      // Same state, same output; the stream moved on, so the next call differs.
      gen.set_state(seed, 7);
      CHECK(dropout(x, p, true, &gen).to_vector<double>() == y.to_vector<double>());
      CHECK(dropout(x, p, true, &gen).to_vector<double>() != y.to_vector<double>());
    }
}

TEST_CASE("dropout rate over a large tensor, and its identity and zero cases") {
  Generator gen(fresh_seed());
  Tensor x = ones({200000});
  const double kept = ops::sum(ops::ne(dropout(x, 0.3, true, &gen), zeros({}))).item();
  CHECK(kept / 200000 == doctest::Approx(0.7).epsilon(0.01));
  const uint64_t before = gen.offset();
  CHECK(dropout(x, 0.0, true, &gen).is_same(x));
  CHECK(dropout(x, 0.7, false, &gen).is_same(x));
  CHECK(ops::sum(ops::abs(dropout(x, 1.0, true, &gen))).item() == 0.0);
  CHECK(gen.offset() == before);
}


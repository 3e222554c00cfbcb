// Philox fills on the emu device equal to the CPU's for the same seed, bit for bit: the
// counter-based generator's promise (its known-answer vectors: tests/runtime). Copies, casts and
// the optimiser updates: tests/spec.
#include <doctest/doctest.h>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "cuda/cuda_test_util.h"
#include "nn/optim.h"
#include "ops/elementwise.h"
#include "runtime/rng.h"

namespace ember::test {

TEST_CASE("emu random fills equal the cpu's for the same seed") {
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (DType t : {kFloat32, kFloat64}) {
      for (const Shape& shape : {Shape{1}, Shape{7}, Shape{33, 5}, Shape{0}}) {
        CAPTURE(t);
        CAPTURE(shape);
        Generator gc(1234), ge(1234);
        Tensor c = empty(shape, t), e = empty(shape, {t, emu()});
        uniform_(c, -2, 3, &gc);
        uniform_(e, -2, 3, &ge);
        CHECK(e.to_vector<double>() == c.to_vector<double>());
        bernoulli_(c, 0.3, &gc);
        bernoulli_(e, 0.3, &ge);
        CHECK(e.to_vector<double>() == c.to_vector<double>());
        normal_(c, 1, 2, &gc);
        normal_(e, 1, 2, &ge);
        check_close(e, c.to(kFloat64), 1e-6, 1e-6);
        CHECK(ge.offset() == gc.offset());
      }
    }
    // Non-contiguous and non-float destinations go through a float64 fill on the device.
    Generator gc(9), ge(9);
    Tensor c = zeros({4, 6}).t(), e = zeros({4, 6}, {kFloat32, emu()}).t();
    uniform_(c, 0, 1, &gc);
    uniform_(e, 0, 1, &ge);
    CHECK(e.to_vector<float>() == c.to_vector<float>());
    Tensor cb = empty({50}, kBool), eb = empty({50}, {kBool, emu()});
    bernoulli_(cb, 0.5, &gc);
    bernoulli_(eb, 0.5, &ge);
    CHECK(eb.to_vector<double>() == cb.to_vector<double>());
  }
}

}  // namespace ember::test

// Philox fills on a real GPU (cuda:0) equal to the CPU's for the same seed. Part of the `gpu`
// executable, skipped without a usable device; the ops' values on cuda:0 are checked by the op
// specs (tests/spec), which that executable runs too.
#include <doctest/doctest.h>

#include "cuda/cuda_test_util.h"
#include "runtime/rng.h"

namespace ember::test {

namespace {
Device gpu0() {
  return Device(DeviceType::CUDA, 0);
}
}  // namespace

TEST_CASE("cuda random fills equal the cpu's for the same seed") {
  Generator gc(42), ge(42);
  Tensor c = empty({1000}), e = empty({1000}, {kFloat32, gpu0()});
  uniform_(c, -1, 1, &gc);
  uniform_(e, -1, 1, &ge);
  CHECK(e.to_vector<float>() == c.to_vector<float>());
  bernoulli_(c, 0.25, &gc);
  bernoulli_(e, 0.25, &ge);
  CHECK(e.to_vector<float>() == c.to_vector<float>());
  normal_(c, 0, 1, &gc);
  normal_(e, 0, 1, &ge);
  check_close(e, c.to(kFloat64), 1e-5, 1e-5);
}

}  // namespace ember::test

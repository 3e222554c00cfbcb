// The CUDA backend's kernels on a real GPU (cuda:0) against the CPU ops in float64: the same
// checks tests/cuda runs on the emulator, at sizes a GPU finishes at once. Part of the `gpu`
// executable, skipped without a usable device.
#include <doctest/doctest.h>

#include "cuda/cuda_test_util.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "runtime/rng.h"

namespace ember::test {

namespace {
Device gpu0() {
  return Device(DeviceType::CUDA, 0);
}
}  // namespace

TEST_CASE("cuda elementwise ops, copies and reductions match the cpu") {
  std::mt19937 g(fresh_seed());
  for (DType t : {kFloat32, kFloat64}) {
    CAPTURE(t);
    const double tol = t == kFloat32 ? 1e-5 : 1e-12;
    const Tensor a = random_operand({37, 1001}, t, Layout::transposed, 0.5, 2, g, 0.0, gpu0());
    const Tensor b = random_operand({1001}, t, Layout::contiguous, 0.5, 2, g, 0.0, gpu0());
    const Tensor ra = a.cpu().to(kFloat64), rb = b.cpu().to(kFloat64);
    check_close(ops::add(a, b), ops::add(ra, rb), tol, 1e-6);
    check_close(ops::div(a, b), ops::div(ra, rb), tol, 1e-6);
    check_close(ops::pow(a, b), ops::pow(ra, rb), 1e-5, 1e-6);
    check_close(ops::lt(a, b), ops::lt(ra, rb), 0, 0);
    check_close(ops::exp(a.contiguous()), ops::exp(ra), 1e-5, 1e-6);
    check_close(ops::where(ops::gt(a, b), a, b), ops::where(ops::gt(ra, rb), ra, rb), 0, 0);
    check_close(a.to(kInt64), ra.to(kInt64), 0, 0);
    check_close(ops::sum(a, {0}), ops::sum(ra, {0}), tol, 1e-6);
    check_close(ops::var(a, {1}, 1, true), ops::var(ra, {1}, 1, true), tol, 1e-6);
    check_close(ops::amax(a), ops::amax(ra), 0, 0);
    CHECK(ops::argmin(a, 1).to_vector<int64_t>() == ops::argmin(ra, 1).to_vector<int64_t>());
  }
}

TEST_CASE("cuda GEMM matches the cpu on odd sizes and batches") {
  std::mt19937 g(fresh_seed());
  for (DType t : {kFloat32, kFloat64}) {
    for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{
             {{1, 1}, {1, 1}}, {{129, 65}, {65, 257}}, {{3, 70, 31}, {31, 9}}, {{5, 0}, {0, 2}}}) {
      CAPTURE(sa);
      const Tensor a = random_operand(sa, t, Layout::transposed, -1, 1, g, 0.0, gpu0());
      const Tensor b = random_operand(sb, t, Layout::contiguous, -1, 1, g, 0.0, gpu0());
      check_close(ops::matmul(a, b), ops::matmul(a.cpu().to(kFloat64), b.cpu().to(kFloat64)),
                  t == kFloat32 ? 1e-4 : 1e-12, 1e-5);
    }
  }
}

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

// matmul, mm and bmm on every target (tests/spec/spec.h) against torch.matmul's rules in float64
// loops (op_test_util.h's matmul_reference): 1-D operands, broadcast batches, every size class
// (1, sizes that straddle the GPU's tiles, K = 0, empty), transposed, sliced and broadcast
// operands; float16/bfloat16 (Note [Widened half ops] in ops/dispatch.h); integer dtypes are
// refused with DTypeError; sum(matmul(a, b) + c) end to end.
// The GPU GEMM's own tiles and edge cases: tests/cuda/test_gemm_emu.cpp.
#include <doctest/doctest.h>

#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

struct Case {
  Shape a, b;
  Layout la, lb;
};

const Case kCases[] = {
    {{7, 13}, {13, 5}, Layout::contiguous, Layout::contiguous},
    {{7, 13}, {13, 5}, Layout::transposed, Layout::transposed},
    {{7, 13}, {13, 5}, Layout::sliced, Layout::sliced},
    {{7, 13}, {13, 5}, Layout::expanded, Layout::contiguous},
    {{13}, {13}, Layout::contiguous, Layout::sliced},
    {{13}, {13, 5}, Layout::contiguous, Layout::contiguous},
    {{9}, {9, 2}, Layout::sliced, Layout::transposed},
    {{7, 13}, {13}, Layout::transposed, Layout::contiguous},
    {{2, 17, 9}, {9}, Layout::contiguous, Layout::contiguous},
    {{13}, {3, 13, 5}, Layout::contiguous, Layout::transposed},
    {{2, 7, 13}, {13, 5}, Layout::contiguous, Layout::contiguous},
    {{1, 4, 3}, {3, 2}, Layout::transposed, Layout::sliced},
    {{3, 1, 4, 5}, {2, 5, 6}, Layout::transposed, Layout::contiguous},
    {{4, 7, 13}, {4, 13, 5}, Layout::expanded, Layout::sliced},
    {{2, 9, 20}, {2, 20, 5}, Layout::sliced, Layout::transposed},
    {{1, 1}, {1, 1}, Layout::contiguous, Layout::contiguous},
    {{1, 7}, {7, 1}, Layout::contiguous, Layout::transposed},
    {{5, 1}, {1, 3}, Layout::transposed, Layout::contiguous},
    {{65, 17}, {17, 66}, Layout::contiguous, Layout::sliced},
    {{70, 33}, {33, 1}, Layout::transposed, Layout::contiguous},
    {{0, 3}, {3, 4}, Layout::contiguous, Layout::contiguous},
    {{3, 0}, {0, 4}, Layout::contiguous, Layout::contiguous},
    {{0}, {0}, Layout::contiguous, Layout::contiguous},
    {{2, 0, 3}, {3, 4}, Layout::contiguous, Layout::contiguous},
    {{130, 257}, {257, 65}, Layout::contiguous, Layout::transposed},
    {{16, 9, 11}, {16, 11, 3}, Layout::contiguous, Layout::contiguous},
};

}  // namespace

TEST_CASE("matmul, mm and bmm match a float64 reference on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      for (const Case& c : kCases) {
        CAPTURE(t);
        CAPTURE(c.a);
        CAPTURE(c.b);
        CAPTURE(c.la);
        CAPTURE(c.lb);
        const Tensor a = random_operand(c.a, t, c.la, -1, 1, g, 0.0, dev);
        const Tensor b = random_operand(c.b, t, c.lb, -1, 1, g, 0.0, dev);
        const auto [shape, want] =
            matmul_reference(c.a, a.to_vector<double>(), c.b, b.to_vector<double>());
        // Half types: 1 ulp of the rounded float64 product, or float32's accumulation error
        // over K products of magnitude at most 1 (1e-6 per term) where the result is near 0.
        const int64_t k = c.a.back();
        const Tolerance tol =
            t == kFloat16 || t == kBFloat16
                ? scaled_tolerance(t, static_cast<double>(std::max<int64_t>(k, 1)))
                : default_tolerance(t);
        check_result(ops::matmul(a, b), dev, t, shape, want, tol);
        if (c.a.size() == 2 && c.b.size() == 2)
          check_result(ops::mm(a, b), dev, t, shape, want, tol);
        if (c.a.size() == 3 && c.b.size() == 3 && c.a[0] == c.b[0])
          check_result(ops::bmm(a, b), dev, t, shape, want, tol);
      }
    }
  });
}

TEST_CASE("matmul of integer tensors raises DTypeError on every target") {
  for_each_target([&](Device dev) {
    const Tensor a = from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3}).to(dev);
    const Tensor b = from_vector<int64_t>({1, -1, 0, 2, 3, 1}, {3, 2}).to(dev);
    CHECK_THROWS_AS(ops::matmul(a, b), DTypeError);
    CHECK_THROWS_AS(ops::mm(a.to(kInt32), b.to(kInt32)), DTypeError);
  });
}

TEST_CASE("sum(matmul(a, b) + c) end to end on every target") {
  std::mt19937 g(fresh_seed());
  const Tensor a = random_tensor({37, 29}, kFloat32, -1, 1, g);
  const Tensor b = random_tensor({29, 71}, kFloat32, -1, 1, g);
  const Tensor c = random_tensor({71}, kFloat32, -1, 1, g);
  const auto [shape, prod] =
      matmul_reference({37, 29}, a.to_vector<double>(), {29, 71}, b.to_vector<double>());
  const std::vector<double> vc = c.to_vector<double>();
  double want = 0;
  for (size_t i = 0; i < prod.size(); ++i) want += prod[i] + vc[i % 71];
  for_each_target([&](Device dev) {
    const Tensor got = ops::sum(ops::add(ops::matmul(a.to(dev), b.to(dev)), c.to(dev)));
    CHECK(got.device() == dev);
    CHECK(got.item() == doctest::Approx(want).epsilon(1e-5));
  });
}

}  // namespace ember::test

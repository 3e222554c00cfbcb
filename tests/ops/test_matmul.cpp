// matmul/mm/bmm against a naive float64 reference of torch.matmul's rules.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "op_test_util.h"
#include "ops/matmul.h"

using namespace ember;
using namespace ember::test;

namespace {

// torch.matmul in loops: 1-D operands become a row/column, batch dims broadcast.
std::pair<Shape, std::vector<double>> reference(const Shape& sa, const std::vector<double>& va,
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

struct Case {
  Shape a, b;
  Layout la, lb;
};

}  // namespace

TEST_CASE("matmul matches a float64 reference") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const Case cases[] = {
      {{7, 13}, {13, 5}, Layout::contiguous, Layout::contiguous},
      {{7, 13}, {13, 5}, Layout::transposed, Layout::transposed},
      {{7, 13}, {13, 5}, Layout::sliced, Layout::sliced},
      {{7, 13}, {13, 5}, Layout::expanded, Layout::contiguous},
      {{13}, {13}, Layout::contiguous, Layout::sliced},
      {{13}, {13, 5}, Layout::contiguous, Layout::contiguous},
      {{7, 13}, {13}, Layout::transposed, Layout::contiguous},
      {{13}, {3, 13, 5}, Layout::contiguous, Layout::transposed},
      {{2, 7, 13}, {13, 5}, Layout::contiguous, Layout::contiguous},
      {{3, 1, 4, 5}, {2, 5, 6}, Layout::transposed, Layout::contiguous},
      {{4, 7, 13}, {4, 13, 5}, Layout::expanded, Layout::sliced},
      {{1, 1}, {1, 1}, Layout::contiguous, Layout::contiguous},
      {{0, 3}, {3, 4}, Layout::contiguous, Layout::contiguous},
      {{3, 0}, {0, 4}, Layout::contiguous, Layout::contiguous},
      {{0}, {0}, Layout::contiguous, Layout::contiguous},
      {{2, 0, 3}, {3, 4}, Layout::contiguous, Layout::contiguous},
      {{130, 257}, {257, 65}, Layout::contiguous, Layout::transposed},
      {{16, 9, 11}, {16, 11, 3}, Layout::contiguous, Layout::contiguous},
  };
  for (DType t : {kFloat32, kFloat64}) {
    for (const Case& c : cases) {
      CAPTURE(t);
      CAPTURE(c.a);
      CAPTURE(c.b);
      CAPTURE(layout_name(c.la));
      CAPTURE(layout_name(c.lb));
      const Tensor a = random_operand(c.a, t, c.la, -1, 1, g);
      const Tensor b = random_operand(c.b, t, c.lb, -1, 1, g);
      const Tensor out = ops::matmul(a, b);
      const auto [shape, want] = reference(c.a, a.to_vector<double>(), c.b, b.to_vector<double>());
      CHECK(out.shape() == shape);
      CHECK(out.dtype() == t);
      check_values(out, want, t);
      if (c.a.size() == 2 && c.b.size() == 2) check_values(ops::mm(a, b), want, t);
      if (c.a.size() == 3 && c.b.size() == 3 && c.a[0] == c.b[0])
        check_values(ops::bmm(a, b), want, t);
    }
  }
}

TEST_CASE("the GPU GEMM choice: API, EMBER_GEMM, and emu always on Ember's GEMM") {
  CHECK(ops::gpu_gemm() == ops::GpuGemm::automatic);
  CHECK(std::string(ops::gpu_gemm_name(ops::GpuGemm::cublas)) == "cublas");
  if (!ops::gpu_gemm_has_cublas()) {
    CHECK_THROWS_AS(ops::set_gpu_gemm(ops::GpuGemm::cublas), DeviceError);
  }
  ::setenv("EMBER_GEMM", "ember", 1);
  CHECK(ops::gpu_gemm() == ops::GpuGemm::ember);
  ::setenv("EMBER_GEMM", "fastest", 1);
  CHECK_THROWS_AS(ops::gpu_gemm(), ValueError);
  ops::set_gpu_gemm(ops::GpuGemm::ember);  // the API wins over the environment
  CHECK(ops::gpu_gemm() == ops::GpuGemm::ember);
  ::unsetenv("EMBER_GEMM");
  if (ops::gpu_gemm_has_cublas()) ops::set_gpu_gemm(ops::GpuGemm::cublas);
  const Device emu = Device::parse("emu:0");
  const Tensor a = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = from_vector<double>({1, 0, -1, 2, 0.5, 1}, {3, 2});
  CHECK(ops::matmul(a.to(emu), b.to(emu)).to_vector<double>() ==
        ops::matmul(a, b).to_vector<double>());
  ops::set_gpu_gemm(ops::GpuGemm::automatic);
}

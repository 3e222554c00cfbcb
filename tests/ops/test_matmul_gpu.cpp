// matmul on cuda:0 through cuBLAS and through Ember's tiled GEMM: both against the CPU in float64
// and against each other, on layouts cuBLAS takes (transposes, broadcast batches) and on ones
// that fall back to Ember's GEMM (sliced rows). Part of the `gpu` executable.
#include <doctest/doctest.h>

#include "cuda/cuda_test_util.h"
#include "ops/matmul.h"
#include "skip_case.h"

namespace ember::test {

namespace {
// Restores the automatic choice when a test case ends, passed or not.
struct GemmChoice {
  explicit GemmChoice(ops::GpuGemm g) { ops::set_gpu_gemm(g); }
  ~GemmChoice() { ops::set_gpu_gemm(ops::GpuGemm::automatic); }
};
}  // namespace

TEST_CASE("cuBLAS and Ember's GEMM agree on cuda:0 and match the cpu") {
  if (!ops::gpu_gemm_has_cublas()) {
    skip_case("this build has no cuBLAS: nothing to compare");
    return;
  }
  const Device gpu(DeviceType::CUDA, 0);
  std::mt19937 g(fresh_seed());
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {{{1, 1}, {1, 1}},          {{129, 65}, {65, 257}},
                                   {{3, 70, 31}, {31, 9}},    {{4, 33, 17}, {4, 17, 40}},
                                   {{2, 1, 5, 7}, {3, 7, 6}}, {{17}, {17, 5}},
                                   {{256, 256}, {256, 256}},  {{5, 0}, {0, 2}}};
  for (DType t : {kFloat32, kFloat64}) {
    for (const Case& c : cases) {
      for (Layout la : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
        for (Layout lb : {Layout::contiguous, Layout::transposed, Layout::expanded}) {
          CAPTURE(t);
          CAPTURE(c.a);
          CAPTURE(c.b);
          CAPTURE(std::string(layout_name(la)));
          CAPTURE(std::string(layout_name(lb)));
          const Tensor a = random_operand(c.a, t, la, -1, 1, g, 0.0, gpu);
          const Tensor b = random_operand(c.b, t, lb, -1, 1, g, 0.0, gpu);
          const Tensor want = ops::matmul(a.cpu().to(kFloat64), b.cpu().to(kFloat64));
          const double rtol = t == kFloat32 ? 1e-4 : 1e-12;
          Tensor by_ember, by_cublas;
          {
            GemmChoice choice(ops::GpuGemm::ember);
            by_ember = ops::matmul(a, b);
          }
          {
            GemmChoice choice(ops::GpuGemm::cublas);
            by_cublas = ops::matmul(a, b);
          }
          CHECK(by_cublas.device() == gpu);
          check_close(by_cublas, want, rtol, 1e-5);
          check_close(by_ember, want, rtol, 1e-5);
          check_close(by_cublas, by_ember.to(kFloat64), rtol, 1e-5);
        }
      }
    }
  }
}

}  // namespace ember::test

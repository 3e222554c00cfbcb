// The GPU GEMM choice (Ember's GEMM or cuBLAS): the API, EMBER_GEMM and its errors. The values
// of matmul on every device are checked by tests/spec/matmul.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "op_test_util.h"
#include "ops/matmul.h"

using namespace ember;
using namespace ember::test;

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

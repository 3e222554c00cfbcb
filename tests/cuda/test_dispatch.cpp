// The kernel tables and the helpers that turn tensors into kernel parameters: which tables
// exist, the current stream, dim merging, and operands with more dims than the kernels' strided
// index holds.
#include <doctest/doctest.h>

#include <cmath>

#include "cuda/cuda_test_util.h"
#include "ember/build_config.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ember::test {

TEST_CASE("the cpu and emu tables are always there; the cuda one only in builds with CUDA") {
  CHECK((kernels_for(kCPU).gemm_batched == &kernels::cpu::gemm_batched));
  CHECK((kernels_for(kCPU).max_pool2d_fwd == &kernels::cpu::max_pool2d_fwd));
  CHECK((kernels_for(Device(DeviceType::EMU, 0)).gemm_batched == &kernels::emu::gemm_batched));
  CHECK((kernels_for(Device(DeviceType::EMU, 0)).copy_strided == &kernels::emu::copy_strided));
#if EMBER_HAVE_CUDA
  if (gpu::backend(DeviceType::CUDA).availability().usable)
    CHECK((kernels_for(Device(DeviceType::CUDA, 0)).gemm_batched == &kernels::cuda::gemm_batched));
  else
    MESSAGE("SKIPPED: the cuda table's entries: no usable GPU (",
            gpu::backend(DeviceType::CUDA).availability().reason, ")");
#else
  CHECK_THROWS_AS(kernels_for(Device(DeviceType::CUDA, 0)), DeviceError);
#endif
}

TEST_CASE("ops launch on the current stream of their device, and a guard restores it") {
  const Device dev = emu();
  CHECK(gpu::current_stream(dev) == nullptr);
  CHECK(gpu::current_stream(kCPU) == nullptr);
  gpu::Backend& b = gpu::backend(dev);
  gpu::Stream s = b.stream_create(dev.index);
  std::mt19937 g(fresh_seed());
  const Tensor x = random_tensor({37, 5}, kFloat64, -1, 1, g);
  {
    gpu::StreamGuard guard(dev, s);
    CHECK(gpu::current_stream(dev) == s);
    CHECK(ops::stream_of(dev) == s);
    const Tensor y = ops::exp(x.to(dev));
    b.stream_synchronize(s);
    check_close(y, ops::exp(x), 1e-12, 0);
  }
  CHECK(gpu::current_stream(dev) == nullptr);
  b.stream_destroy(s);
  CHECK_THROWS_AS(gpu::set_current_stream(kCPU, nullptr), DeviceError);
}

TEST_CASE("strided indices drop size-1 dims and merge dims contiguous in every operand") {
  ops::StridedIndex<2> s;
  REQUIRE(ops::make_strided_index<2>({2, 1, 3, 4}, {Shape{12, 12, 4, 1}, Shape{0, 0, 4, 1}}, s));
  CHECK(s.ndim == 2);
  CHECK(s.sizes[0] == 2);
  CHECK(s.sizes[1] == 12);
  CHECK(s.strides[1][0] == 0);
  CHECK(s.strides[1][1] == 1);
  // Reversed strides never merge: nine such dims do not fit.
  Shape sizes(9, 2), rev(9);
  for (int d = 0; d < 9; ++d) rev[d] = int64_t{1} << d;
  CHECK_FALSE(ops::make_strided_index<2>(sizes, {rev, rev}, s));
  REQUIRE(
      ops::make_strided_index<2>(sizes, {contiguous_strides(sizes), contiguous_strides(sizes)}, s));
  CHECK(s.ndim == 1);
}

TEST_CASE("emu ops on tensors with more than 8 unmergeable dims match float64 loops") {
  std::mt19937 g(fresh_seed());
  const Tensor base = random_tensor(Shape(9, 2), kFloat32, -1, 1, g);
  const std::vector<double> bv = base.to_vector<double>();
  std::vector<int64_t> rev(9);
  for (int d = 0; d < 9; ++d) rev[d] = 8 - d;
  // x = base with its 9 dims reversed: x's element at row-major index i is base's at the index
  // with i's 9 bits reversed.
  const Tensor x = base.to(emu()).permute(rev);
  std::vector<double> xv(512), ev(512), sv(128, 0.0);
  for (int i = 0; i < 512; ++i) {
    int r = 0;
    for (int d = 0; d < 9; ++d) r |= ((i >> d) & 1) << (8 - d);
    xv[i] = bv[r];
    ev[i] = std::exp(xv[i]);
    sv[(i >> 1) & 127] += xv[i];  // sum over dims 0 and 8: the top and bottom bits
  }
  check_close(ops::exp(x), from_vector(ev, Shape(9, 2)), 1e-6, 0);
  std::vector<double> twice(xv);
  for (double& v : twice) v *= 2;
  check_close(ops::add(x, x.contiguous()), from_vector(twice, Shape(9, 2)), 1e-6, 0);
  check_close(ops::sum(x, {0, 8}), from_vector(sv, Shape(7, 2)), 1e-6, 1e-6);
  check_close(x.to(kFloat64), from_vector(xv, Shape(9, 2)), 0, 0);
}

}  // namespace ember::test

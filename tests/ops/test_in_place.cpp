// The in-place ops an owner of a tensor may use (clamp_, add_, relu_: what the ONNX runtime does
// with a value whose last reader it is), against float64 references written here, on cpu and
// emu, with fresh random inputs and odd sizes; and their errors.
#include <doctest/doctest.h>

#include <algorithm>

#include "op_test_util.h"
#include "ops/activation.h"
#include "ops/elementwise.h"

using namespace ember;
using namespace ember::test;

namespace {

const Device kDevices[] = {kCPU, Device(DeviceType::EMU, 0)};

}  // namespace

TEST_CASE("clamp_, add_ and relu_ write their result into the tensor they are given") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (const Device dev : kDevices)
    for (const DType t : {kFloat32, kFloat64}) {
      CAPTURE(dev);
      CAPTURE(t);
      const Shape shape{3, 37};
      const Tensor a0 = random_tensor(shape, t, -3, 3, g), b0 = random_tensor({37}, t, -3, 3, g);
      const std::vector<double> a = a0.to(kFloat64).to_vector<double>();
      const std::vector<double> b = b0.to(kFloat64).to_vector<double>();

      Tensor x = a0.to(dev).clone();
      const void* where = x.data_ptr();
      Tensor r = ops::clamp_(x, -1.25, 0.5);
      CHECK(r.data_ptr() == where);
      std::vector<double> got = x.to(kCPU).to(kFloat64).to_vector<double>();
      for (size_t i = 0; i < a.size(); ++i) CHECK(got[i] == std::min(std::max(a[i], -1.25), 0.5));

      x = a0.to(dev).clone();
      where = x.data_ptr();
      CHECK(ops::add_(x, b0.to(dev)).data_ptr() == where);  // b broadcast over the rows
      got = x.to(kCPU).to(kFloat64).to_vector<double>();
      for (size_t i = 0; i < a.size(); ++i) {
        const double want = t == kFloat32 ? double(float(a[i]) + float(b[i % 37])) : a[i] + b[i % 37];
        CHECK(got[i] == want);
      }

      x = a0.to(dev).clone();
      where = x.data_ptr();
      CHECK(ops::relu_(x).data_ptr() == where);
      got = x.to(kCPU).to(kFloat64).to_vector<double>();
      for (size_t i = 0; i < a.size(); ++i) CHECK(got[i] == std::max(a[i], 0.0));
    }
}

TEST_CASE("in-place ops refuse a result they cannot hold") {
  const Tensor x = zeros({4, 6});
  const Tensor strided = x.t();
  CHECK(message_of([&] { ops::clamp_(strided, 0, 1); }).find("clamp_: expected a contiguous") == 0);
  CHECK(message_of([&] { ops::relu_(strided); }).find("relu_: expected a contiguous") == 0);
  CHECK_THROWS_AS(ops::clamp_(x, 0, std::nan("")), ValueError);
  // The result's shape [4, 6] and dtype must be x's own.
  CHECK_THROWS_AS(ops::add_(zeros({1, 6}), x), ShapeError);
  CHECK_THROWS_AS(ops::add_(x, zeros({4, 6}, kFloat64)), DTypeError);
  CHECK_THROWS_AS(ops::add_(zeros({4, 6}, kInt64), x), DTypeError);
  CHECK_THROWS_AS(ops::relu_(zeros({3}, kInt64)), DTypeError);
  CHECK(message_of([&] { ops::add_(zeros({1, 6}), x); }) ==
        "add_: the result's shape [4, 6] cannot be written into a tensor of shape [1, 6]");
}

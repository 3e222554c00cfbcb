// The differentiable copies and conversions (autograd/copy.h): values, when a new tensor is made,
// and the gradient coming back on the input's device and in its dtype.
#include <doctest/doctest.h>

#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/grad_test_util.h"

using namespace ember;
using ember::test::leaf;

namespace {

std::string grad_fn_name(const Tensor& t) {
  AutogradMeta* m = autograd_meta_if(t);
  return m && m->grad_fn ? m->grad_fn->name() : "";
}

}  // namespace

TEST_CASE("to a narrower dtype rounds the values; the gradient comes back in float64") {
  Tensor x = leaf({0.1, 1.0 / 3.0, -2.5}, {3});
  Tensor y = to(x, kFloat32);
  CHECK(y.dtype() == kFloat32);
  std::vector<float> f = y.to_vector<float>();
  CHECK(f == std::vector<float>{0.1f, static_cast<float>(1.0 / 3.0), -2.5f});
  CHECK(grad_fn_name(y) == "ToCopyBackward");
  backward(sum(mul(y, 3.0)));
  CHECK(grad(x).dtype() == kFloat64);
  CHECK(grad(x).to_vector<double>() == std::vector<double>{3, 3, 3});
}

TEST_CASE("to another device and back: the gradient is on the input's device") {
  const Device emu = Device::parse("emu:0");
  Tensor x = leaf({1, 2, 3, 4}, {2, 2});
  Tensor y = to(x, emu);
  CHECK(y.device() == emu);
  CHECK(y.to_vector<double>() == x.to_vector<double>());
  Tensor z = to(mul(y, y), kCPU);
  CHECK(z.device() == kCPU);
  backward(sum(z));
  CHECK(grad(x).device() == kCPU);
  CHECK(grad(x).to_vector<double>() == std::vector<double>{2, 4, 6, 8});
}

TEST_CASE("to is the input itself when nothing changes, and needs a floating dtype for grad") {
  Tensor x = leaf({1, 2}, {2});
  CHECK(to(x, kFloat64).is_same(x));
  CHECK(to(x, kCPU, kFloat64).is_same(x));
  CHECK_THROWS_AS(to(x, kInt64), DTypeError);
  CHECK(to(detach(x), kInt64).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  NoGradGuard no_grad;
  CHECK(to(x, kInt32).dtype() == kInt32);
}

TEST_CASE("contiguous copies only a non-contiguous input; clone always copies") {
  Tensor x = leaf({0, 1, 2, 3, 4, 5}, {2, 3});
  CHECK(contiguous(x).is_same(x));
  Tensor t = transpose(x, 0, 1);
  Tensor c = contiguous(t);
  CHECK(c.is_contiguous());
  CHECK(c.storage() != x.storage());
  CHECK(c.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});

  Tensor k = clone(x);
  CHECK(k.storage() != x.storage());
  CHECK(k.to_vector<double>() == x.to_vector<double>());
  CHECK(grad_fn_name(k) == "CloneBackward");

  Tensor w = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
  backward(sum(c * w) + sum(k));
  // c[j][i] = x[i][j] carries weight w[j][i]; clone adds 1 everywhere.
  CHECK(grad(x).to_vector<double>() == std::vector<double>{2, 4, 6, 3, 5, 7});
}

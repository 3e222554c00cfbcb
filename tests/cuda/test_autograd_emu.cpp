// The differentiable API on emu tensors: a small graph's forward and backward run on the device
// (its backward uses the same elementwise, reduction, matmul and copy kernels) and give the
// CPU's gradients.
#include <doctest/doctest.h>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "cuda/cuda_test_util.h"

namespace ember::test {

namespace {
// loss = mean(clamp(exp(x w) * b - x w, -1, 3)^2) over a batch; returns (loss, dx, dw, db).
std::vector<Tensor> run_graph(const Tensor& x0, const Tensor& w0, const Tensor& b0) {
  Tensor x = x0.clone(), w = w0.clone(), b = b0.clone();
  requires_grad_(x);
  requires_grad_(w);
  requires_grad_(b);
  const Tensor h = matmul(x, w);
  const Tensor y = clamp(sub(mul(exp(mul(h, 0.5)), b), h), -1, 3);
  const Tensor loss = mean(pow(y, 2.0));
  backward(loss);
  return {loss, grad(x), grad(w), grad(b)};
}
}  // namespace

TEST_CASE("emu autograd: forward and backward of a small graph match the cpu") {
  std::mt19937 g(fresh_seed());
  const Tensor x = random_tensor({5, 7}, kFloat64, -1, 1, g);
  const Tensor w = random_tensor({7, 3}, kFloat64, -1, 1, g);
  const Tensor b = random_tensor({3}, kFloat64, -1, 1, g);
  const std::vector<Tensor> want = run_graph(x, w, b);
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    const std::vector<Tensor> got = run_graph(x.to(emu()), w.to(emu()), b.to(emu()));
    for (size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      REQUIRE(got[i].defined());
      CHECK(got[i].device() == emu());
      check_close(got[i], want[i], 1e-10, 1e-12);
    }
  }
}

}  // namespace ember::test

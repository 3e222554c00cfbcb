// Gradient clipping and parameter vectors (nn/clip_grad.h) against PyTorch's rules written out in
// float64 here (torch/nn/utils/clip_grad.py): the total p-norm of all gradients (p = 2, 1, 3, inf,
// and PyTorch's p = 0), the scaling by min(max_norm / (norm + 1e-6), 1), the returned norm,
// error_if_nonfinite; clip_grad_value_; parameters_to_vector / vector_to_parameters; and a clip +
// update step on the emulator that never waits for the device (Note [Clipping on the device]).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "nn/clip_grad.h"
#include "nn/optim.h"
#include "ops/op_test_util.h"
#include "runtime/gpu.h"

using namespace ember;
using namespace ember::nn;
using ember::test::message_of;

namespace {

const Device kEmu(DeviceType::EMU, 0);

struct Params {
  std::vector<Tensor> ps;
  std::vector<std::vector<double>> grads;
};

// Three parameters with random float64 gradients (the third gets none), on `dev`.
Params make(std::mt19937& g, Device dev, DType t = kFloat64) {
  Params r;
  const Shape shapes[] = {{3, 5}, {7}, {2}};
  std::uniform_real_distribution<double> u(-2, 2);
  for (int i = 0; i < 3; ++i) {
    Tensor p = zeros(shapes[i], {t, dev});
    requires_grad_(p);
    r.ps.push_back(p);
    if (i == 2) continue;
    std::vector<double> gv(static_cast<size_t>(p.numel()));
    for (double& v : gv) v = u(g);
    backward(sum(mul(p, from_vector(gv, shapes[i]).to(t).to(dev))));
    r.grads.push_back(grad(p).to(kCPU).to_vector<double>());  // as stored, in t
  }
  return r;
}

// PyTorch's total: the p-norm of the gradients' p-norms (for p = 0, the number of gradients with a
// non-zero element).
double norm_of(const std::vector<std::vector<double>>& grads, double p) {
  double acc = 0;
  for (const auto& g : grads) {
    bool nonzero = false;
    for (double v : g) {
      nonzero = nonzero || v != 0;
      if (std::isinf(p))
        acc = std::max(acc, std::abs(v));
      else if (p != 0)
        acc += std::pow(std::abs(v), p);
    }
    if (p == 0) acc += nonzero;
  }
  return std::isinf(p) || p == 0 ? acc : std::pow(acc, 1 / p);
}

}  // namespace

TEST_CASE("clip_grad_norm_ scales every gradient by min(max_norm / (total + 1e-6), 1)") {
  const unsigned seed = ember::test::fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const double inf = std::numeric_limits<double>::infinity();
  for (Device dev : {Device(kCPU), kEmu}) {
    for (double p : {2.0, 1.0, 3.0, 0.0, inf}) {
      for (double max_norm : {0.5, 1e6}) {
        CAPTURE(dev);
        CAPTURE(p);
        CAPTURE(max_norm);
        Params r = make(g, dev);
        const double total = norm_of(r.grads, p);
        const Tensor got = clip_grad_norm_(r.ps, max_norm, p);
        CHECK(got.dim() == 0);
        CHECK(got.device() == dev);
        CHECK(got.item() == doctest::Approx(total).epsilon(1e-12));
        const double coef = std::min(max_norm / (total + 1e-6), 1.0);
        for (size_t i = 0; i < r.grads.size(); ++i) {
          const std::vector<double> now = grad(r.ps[i]).to(kCPU).to_vector<double>();
          for (size_t k = 0; k < now.size(); ++k)
            CHECK(now[k] == doctest::Approx(r.grads[i][k] * coef).epsilon(1e-12));
        }
        CHECK(!grad(r.ps[2]).defined());
      }
    }
  }
  // float32 gradients: the norm in float32, within its rounding.
  Params r = make(g, kCPU, kFloat32);
  const double total = norm_of(r.grads, 2.0);
  const Tensor got = clip_grad_norm_(r.ps, 1.0);
  CHECK(got.dtype() == kFloat32);
  CHECK(got.item() == doctest::Approx(total).epsilon(1e-6));
  // No gradients at all: a zero norm, nothing to do.
  Tensor lone = zeros({3});
  requires_grad_(lone);
  CHECK(clip_grad_norm_({lone}, 1.0).item() == 0.0);
}

TEST_CASE("clip_grad_norm_ with error_if_nonfinite refuses a NaN or infinite norm") {
  std::mt19937 g(1);
  Params r = make(g, kCPU);
  Tensor bad = zeros({2}, kFloat64);
  requires_grad_(bad);
  backward(sum(mul(bad, from_vector<double>({std::nan(""), 1.0}))));
  std::vector<Tensor> all = r.ps;
  all.push_back(bad);
  const std::string msg = message_of([&] { clip_grad_norm_(all, 1.0, 2.0, true); });
  CHECK(msg.find("The total norm of order 2.0 for gradients from `parameters` is non-finite") == 0);
  CHECK(grad(r.ps[0]).to_vector<double>() == r.grads[0]);  // untouched
  // Without the check, PyTorch's arithmetic: the NaN norm makes every gradient NaN.
  CHECK(std::isnan(clip_grad_norm_(all, 1.0).item()));
  CHECK(std::isnan(grad(r.ps[0]).to_vector<double>()[0]));
  CHECK_THROWS_AS(clip_grad_norm_(r.ps, 1.0, -1.0), ValueError);
}

TEST_CASE("clip_grad_value_ clamps, parameters_to_vector and vector_to_parameters round-trip") {
  std::mt19937 g(2);
  Params r = make(g, kCPU);
  clip_grad_value_(r.ps, 0.5);
  for (size_t i = 0; i < r.grads.size(); ++i) {
    const std::vector<double> now = grad(r.ps[i]).to_vector<double>();
    for (size_t k = 0; k < now.size(); ++k)
      CHECK(now[k] == std::min(std::max(r.grads[i][k], -0.5), 0.5));
  }
  CHECK_THROWS_AS(clip_grad_value_(r.ps, -1.0), ValueError);
  std::vector<double> values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i) * 0.5;
  vector_to_parameters(from_vector(values), r.ps);
  CHECK(r.ps[1].to_vector<double>() ==
        std::vector<double>(values.begin() + 15, values.begin() + 22));
  const Tensor v = parameters_to_vector(r.ps);
  CHECK(v.to_vector<double>() == values);
  // Differentiable, as torch.cat of views.
  backward(sum(mul(v, from_vector(values))));
  CHECK(grad(r.ps[2]).to_vector<double>() == std::vector<double>{11.0, 11.5});
  CHECK_THROWS_AS(vector_to_parameters(zeros({23}, kFloat64), r.ps), ShapeError);
  CHECK_THROWS_AS(vector_to_parameters(zeros({2, 12}, kFloat64), r.ps), ShapeError);
  std::vector<Tensor> mixed = {r.ps[0], zeros({2}, {kFloat64, kEmu})};
  CHECK_THROWS_AS(parameters_to_vector(mixed), DeviceError);
}

TEST_CASE("a clipped training step on the emulator never waits for the device") {
  std::mt19937 g(3);
  Params r = make(g, kEmu, kFloat32);
  SGD opt(r.ps, SGDOptions{0.1, 0.9});
  auto step = [&] {
    opt.zero_grad();
    for (size_t i = 0; i < 2; ++i) backward(sum(add(mul(r.ps[i], r.ps[i]), r.ps[i])));
    const Tensor total = clip_grad_norm_(r.ps, 0.1);
    opt.step();
    return total;
  };
  step();  // the first makes the momentum buffers
  const gpu::HostWaits before = gpu::host_waits();
  Tensor total;
  for (int i = 0; i < 3; ++i) total = step();
  const gpu::HostWaits after = gpu::host_waits();
  CHECK(after.device_to_host_copies == before.device_to_host_copies);
  CHECK(after.synchronizations == before.synchronizations);
  CHECK(total.device() == kEmu);
  CHECK(total.item() > 0.0);
}

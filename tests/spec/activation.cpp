// Activations and their backward ops on every target (tests/spec/spec.h) against their closed
// forms in float64: relu, leaky_relu, sigmoid, tanh, gelu (exact and tanh), silu, elu, softplus
// (two parameter sets), hardtanh, hardswish, hardsigmoid and mish, over odd, empty, transposed
// and sliced shapes, a float32 view off the vector alignment with inputs up to +-90, and
// softplus's threshold; float32, float64, float16 and bfloat16 (within 1 ulp of the closed form
// on the same half inputs, rounded).
#include <doctest/doctest.h>

#include <cmath>

#include "ops/activation.h"
#include "spec/spec.h"

namespace ember::test {
namespace {

constexpr double kPi = 3.14159265358979323846;

struct ActSpec {
  const char* name;
  Tensor (*fwd)(const Tensor& x);
  // (grad_out, x, y): the backward op, from the saved tensor it takes (x, or y for sigmoid/tanh).
  Tensor (*bwd)(const Tensor& g, const Tensor& x, const Tensor& y);
  double (*ref)(double x);
  double (*dref)(double x);  // the derivative
  // sigmoid and tanh: the derivative from the output y their backward op is given (so that a
  // half y, rounded, is what the reference sees too); nullptr for the others.
  double (*dref_of_y)(double y) = nullptr;
};

double sigmoid_ref(double x) {
  return 1 / (1 + std::exp(-x));
}

double gelu_tanh_u(double x) {
  return std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x);
}

const ActSpec kActs[] = {
    {"relu", [](const Tensor& x) { return ops::relu(x); },
     [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::relu_backward(g, x); },
     [](double x) { return x > 0 ? x : 0.0; }, [](double x) { return x > 0 ? 1.0 : 0.0; }},
    {"leaky_relu", [](const Tensor& x) { return ops::leaky_relu(x, 0.2); },
     [](const Tensor& g, const Tensor& x, const Tensor&) {
       return ops::leaky_relu_backward(g, x, 0.2);
     },
     [](double x) { return x > 0 ? x : 0.2 * x; }, [](double x) { return x > 0 ? 1.0 : 0.2; }},
    {"sigmoid", [](const Tensor& x) { return ops::sigmoid(x); },
     [](const Tensor& g, const Tensor&, const Tensor& y) { return ops::sigmoid_backward(g, y); },
     sigmoid_ref, [](double x) { return sigmoid_ref(x) * (1 - sigmoid_ref(x)); },
     [](double y) { return y * (1 - y); }},
    {"tanh", [](const Tensor& x) { return ops::tanh(x); },
     [](const Tensor& g, const Tensor&, const Tensor& y) { return ops::tanh_backward(g, y); },
     [](double x) { return std::tanh(x); }, [](double x) { return 1 / std::pow(std::cosh(x), 2); },
     [](double y) { return 1 - y * y; }},
    {"gelu", [](const Tensor& x) { return ops::gelu(x, GeluApproximate::None); },
     [](const Tensor& g, const Tensor& x, const Tensor&) {
       return ops::gelu_backward(g, x, GeluApproximate::None);
     },
     [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
     [](double x) {
       return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
              x * std::exp(-x * x / 2) / std::sqrt(2 * kPi);
     }},
    {"gelu tanh", [](const Tensor& x) { return ops::gelu(x, GeluApproximate::Tanh); },
     [](const Tensor& g, const Tensor& x, const Tensor&) {
       return ops::gelu_backward(g, x, GeluApproximate::Tanh);
     },
     [](double x) { return 0.5 * x * (1 + std::tanh(gelu_tanh_u(x))); },
     [](double x) {
       const double u = gelu_tanh_u(x), du = std::sqrt(2 / kPi) * (1 + 3 * 0.044715 * x * x);
       return 0.5 * (1 + std::tanh(u)) + 0.5 * x * du / std::pow(std::cosh(u), 2);
     }},
    {"silu", [](const Tensor& x) { return ops::silu(x); },
     [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::silu_backward(g, x); },
     [](double x) { return x * sigmoid_ref(x); },
     [](double x) { return sigmoid_ref(x) + x * sigmoid_ref(x) * (1 - sigmoid_ref(x)); }},
    {"elu", [](const Tensor& x) { return ops::elu(x, 1.5); },
     [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::elu_backward(g, x, 1.5); },
     [](double x) { return x > 0 ? x : 1.5 * std::expm1(x); },
     [](double x) { return x > 0 ? 1.0 : 1.5 * std::exp(x); }},
    // PyTorch's defaults, beta 1 and threshold 20: inputs above 20 take the linear branch.
    {"softplus", [](const Tensor& x) { return ops::softplus(x, 1.0, 20.0); },
     [](const Tensor& g, const Tensor& x, const Tensor&) {
       return ops::softplus_backward(g, x, 1.0, 20.0);
     },
     [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); },
     [](double x) { return x > 20 ? 1.0 : sigmoid_ref(x); }},
    // beta 2, threshold 3: inputs above 1.5 take the linear branch.
    {"softplus beta=2 threshold=3", [](const Tensor& x) { return ops::softplus(x, 2.0, 3.0); },
     [](const Tensor& g, const Tensor& x, const Tensor&) {
       return ops::softplus_backward(g, x, 2.0, 3.0);
     },
     [](double x) { return 2 * x > 3 ? x : std::log1p(std::exp(2 * x)) / 2; },
     [](double x) { return 2 * x > 3 ? 1.0 : sigmoid_ref(2 * x); }},
    // PyTorch's defaults, and relu6 (cuDNN's clipped relu on cuda).
    {"hardtanh", [](const Tensor& x) { return ops::hardtanh(x, -1.0, 1.0); },
     [](const Tensor& g, const Tensor& x, const Tensor&) {
       return ops::hardtanh_backward(g, x, -1.0, 1.0);
     },
     [](double x) { return std::min(std::max(x, -1.0), 1.0); },
     [](double x) { return x > -1 && x < 1 ? 1.0 : 0.0; }},
    {"hardtanh 0..6 (relu6)", [](const Tensor& x) { return ops::hardtanh(x, 0.0, 6.0); },
     [](const Tensor& g, const Tensor& x, const Tensor&) {
       return ops::hardtanh_backward(g, x, 0.0, 6.0);
     },
     [](double x) { return std::min(std::max(x, 0.0), 6.0); },
     [](double x) { return x > 0 && x < 6 ? 1.0 : 0.0; }},
    // x relu6(x + 3) / 6; PyTorch's derivative takes the middle piece's at -3 and 3.
    {"hardswish", [](const Tensor& x) { return ops::hardswish(x); },
     [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::hardswish_backward(g, x); },
     [](double x) { return x * std::min(std::max(x + 3, 0.0), 6.0) / 6; },
     [](double x) { return x < -3 ? 0.0 : x > 3 ? 1.0 : (2 * x + 3) / 6; }},
    {"hardsigmoid", [](const Tensor& x) { return ops::hardsigmoid(x); },
     [](const Tensor& g, const Tensor& x, const Tensor&) {
       return ops::hardsigmoid_backward(g, x);
     },
     [](double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; },
     [](double x) { return x > -3 && x < 3 ? 1.0 / 6 : 0.0; }},
    // x tanh(softplus(x)); its derivative tanh(sp) + x sigmoid(x) sech^2(sp).
    {"mish", [](const Tensor& x) { return ops::mish(x); },
     [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::mish_backward(g, x); },
     [](double x) { return x * std::tanh(std::log1p(std::exp(x))); },
     [](double x) {
       const double sp = std::log1p(std::exp(x));
       return std::tanh(sp) + x * sigmoid_ref(x) / std::pow(std::cosh(sp), 2);
     }},
};

// Checks act's forward on x and its backward on (g, x, y) against the closed forms.
void check_act(const ActSpec& act, const Tensor& x, const Tensor& g, Device dev, DType t) {
  const std::vector<double> xv = x.to_vector<double>(), gv = g.to_vector<double>();
  std::vector<double> want(xv.size()), dwant(xv.size());
  const Tensor y = act.fwd(x);
  const std::vector<double> yv = y.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    want[i] = act.ref(xv[i]);
    dwant[i] = gv[i] * (act.dref_of_y ? act.dref_of_y(yv[i]) : act.dref(xv[i]));
  }
  check_result(y, dev, t, x.shape(), want);
  check_result(act.bwd(g, x, y), dev, t, x.shape(), dwant);
}

}  // namespace

TEST_CASE("activations and their backward ops match their closed forms on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  const Shape shapes[] = {{1}, {3}, {33}, {1000}, {5, 7}, {1, 3, 4}, {0, 3}};
  for_each_target([&](Device dev) {
    for (const ActSpec& act : kActs) {
      for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
        for (const Shape& shape : shapes) {
          for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
            const std::string name = act.name;
            CAPTURE(name);
            CAPTURE(t);
            CAPTURE(shape);
            CAPTURE(layout);
            const Tensor x = random_operand(shape, t, layout, -6, 6, gen, 0.0, dev);
            const Tensor g = random_operand(shape, t, layout, -1, 1, gen, 0.0, dev);
            check_act(act, x, g, dev, t);
          }
        }
        // Views one element into a buffer (float32 off the float4 alignment), inputs up to +-90:
        // the saturated ends of sigmoid, tanh and elu and softplus's linear branch.
        const std::string name = act.name;
        CAPTURE(name);
        CAPTURE(t);
        const Tensor big = random_tensor({1001}, t, -90, 90, gen).to(dev);
        const Tensor g = random_tensor({1001}, t, -1, 1, gen).to(dev);
        check_act(act, big.slice(0, 1, 1001), g.slice(0, 1, 1001), dev, t);
      }
    }
  });
}

TEST_CASE("softplus keeps PyTorch's threshold and large inputs finite on every target") {
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64}) {
      CAPTURE(t);
      const Tensor x = from_vector<double>({-50, 0, 10, 20, 25, 200}).to(dev, t);
      const double e = std::exp(1.0);
      check_result(ops::softplus(x, 1.0, 20.0), dev, t, {6},
                   {std::log1p(std::exp(-50.0)), std::log(2.0), std::log1p(std::exp(10.0)),
                    std::log1p(std::exp(20.0)), 25, 200});
      const Tensor g = ones({6}, {t, dev});
      check_result(ops::softplus_backward(g, x, 1.0, 20.0), dev, t, {6},
                   {1 / (1 + std::exp(50.0)), 0.5, 1 / (1 + std::exp(-10.0)),
                    1 / (1 + std::exp(-20.0)), 1, 1});
      // beta 2, threshold 3 at x = 1 (below: log(1 + e^2) / 2) and 1.5 + 1e-3 (above: linear).
      const Tensor x2 = from_vector<double>({1.0, 1.501}).to(dev, t);
      check_result(ops::softplus(x2, 2.0, 3.0), dev, t, {2},
                   {std::log1p(e * e) / 2, as_stored(1.501, t)});
    }
  });
}

TEST_CASE("hardtanh at its bounds, on NaN, and with bounds the wrong way round, every target") {
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      CAPTURE(t);
      const Tensor x = from_vector<double>({-7, 0, 3, 6, 9, std::nan("")}).to(dev, t);
      const std::vector<double> y = ops::hardtanh(x, 0.0, 6.0).to_vector<double>();
      CHECK(std::vector<double>(y.begin(), y.end() - 1) == std::vector<double>{0, 0, 3, 6, 6});
      CHECK(std::isnan(y.back()));
      // The gradient is zero at the bounds themselves (PyTorch's), and passes through NaN.
      const Tensor g = from_vector<double>({1, 2, 3, 4, 5, 6}).to(dev, t);
      check_result(ops::hardtanh_backward(g, x, 0.0, 6.0), dev, t, {6}, {0, 0, 3, 0, 0, 6});
      check_result(ops::hardtanh(x.slice(0, 0, 5), 2.0, 2.0), dev, t, {5}, {2, 2, 2, 2, 2});
    }
    CHECK_THROWS_WITH_AS(
        ops::hardtanh(zeros({2}, {kFloat32, dev}), 1.0, -1.0),
        doctest::Contains("hardtanh: min_val (1) cannot be greater than max_val (-1)"), ValueError);
  });
}

TEST_CASE("activations reject integer input on every target") {
  for_each_target([&](Device dev) {
    const Tensor x = zeros({3}, {kInt32, dev});
    CHECK_THROWS_AS(ops::relu(x), DTypeError);
    CHECK_THROWS_AS(ops::gelu(x, GeluApproximate::Tanh), DTypeError);
    CHECK_THROWS_AS(ops::sigmoid_backward(x, x), DTypeError);
  });
}

TEST_CASE("hardswish and hardsigmoid at their kinks -3 and 3, as PyTorch, on every target") {
  for_each_target([&](Device dev) {
    for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
      CAPTURE(t);
      const Tensor x = from_vector<double>({-4, -3, 0, 3, 4}).to(dev, t);
      const Tensor g = ones({5}, {t, dev});
      check_result(ops::hardswish(x), dev, t, {5}, {0, 0, 0, 3, 4});
      // PyTorch: 0 below -3, x / 3 + 1/2 on [-3, 3] (so -1/2 at -3, 3/2 at 3), 1 above.
      check_result(ops::hardswish_backward(g, x), dev, t, {5}, {0, -0.5, 0.5, 1.5, 1});
      check_result(ops::hardsigmoid(x), dev, t, {5}, {0, 0, 0.5, 1, 1});
      check_result(ops::hardsigmoid_backward(g, x), dev, t, {5}, {0, 0, 1.0 / 6, 0, 0});
    }
  });
}

}  // namespace ember::test

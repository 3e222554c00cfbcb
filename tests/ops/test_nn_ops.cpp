// Batch norm's running statistics by hand, activations, dropout, linear and softmax against
// float64 references written here with naive loops and textbook formulas, on fresh random inputs,
// odd shapes and strided views. (Batch norm's values on every device: tests/spec/batch_norm.cpp.)
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include "autograd/activation.h"
#include "autograd/batch_norm.h"
#include "autograd/dropout.h"
#include "autograd/linear.h"
#include "autograd/softmax.h"
#include "op_test_util.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "runtime/rng.h"

using namespace ember;
using namespace ember::test;

namespace {

const DType kFloatTypes[] = {kFloat32, kFloat64};

}  // namespace

TEST_CASE("batch_norm running statistics by hand") {
  // One channel, values 1 and 3: mean 2, biased variance 1, unbiased variance 2.
  Tensor x = from_vector<double>({1, 3}, {2, 1});
  Tensor rm = from_vector<double>({0.0}), rv = from_vector<double>({1.0});
  Tensor y = batch_norm(x, Tensor(), Tensor(), rm, rv, true, 0.1, 1e-5);
  CHECK(rm.item() == doctest::Approx(0.2));  // 0.9 * 0 + 0.1 * 2
  CHECK(rv.item() == doctest::Approx(1.1));  // 0.9 * 1 + 0.1 * 2
  CHECK(y.to_vector<double>()[0] == doctest::Approx(-1 / std::sqrt(1 + 1e-5)));
  // Training without running statistics is allowed; a 0-size batch leaves them alone.
  CHECK(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true).shape() == Shape{2, 1});
  Tensor empty_x = zeros({0, 1, 3}, kFloat64);
  CHECK(batch_norm(empty_x, Tensor(), Tensor(), rm, rv, true).numel() == 0);
  CHECK(rm.item() == doctest::Approx(0.2));
}

namespace {

struct ActSpec {
  const char* name;
  std::function<Tensor(const Tensor&)> f;
  std::function<Tensor(const Tensor& g, const Tensor& x, const Tensor& y)> backward;
  std::function<double(double)> ref, dref;  // value and derivative
};

double sigmoid_ref(double x) {
  return 1 / (1 + std::exp(-x));
}

const std::vector<ActSpec>& act_specs() {
  const double kPi = 3.14159265358979323846;
  static const std::vector<ActSpec> s = {
      {"relu", [](const Tensor& x) { return relu(x); },
       [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::relu_backward(g, x); },
       [](double x) { return x > 0 ? x : 0; }, [](double x) { return x > 0 ? 1.0 : 0.0; }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::leaky_relu_backward(g, x, 0.2);
       },
       [](double x) { return x > 0 ? x : 0.2 * x; }, [](double x) { return x > 0 ? 1.0 : 0.2; }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); },
       [](const Tensor& g, const Tensor&, const Tensor& y) { return ops::sigmoid_backward(g, y); },
       sigmoid_ref, [](double x) { return sigmoid_ref(x) * (1 - sigmoid_ref(x)); }},
      {"tanh", [](const Tensor& x) { return ember::tanh(x); },
       [](const Tensor& g, const Tensor&, const Tensor& y) { return ops::tanh_backward(g, y); },
       [](double x) { return std::tanh(x); },
       [](double x) { return 1 / std::pow(std::cosh(x), 2); }},
      {"gelu", [](const Tensor& x) { return gelu(x); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::gelu_backward(g, x, GeluApproximate::None);
       },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       [kPi](double x) {
         return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
                x * std::exp(-x * x / 2) / std::sqrt(2 * kPi);
       }},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, "tanh"); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::gelu_backward(g, x, GeluApproximate::Tanh);
       },
       [kPi](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x)));
       },
       [kPi](double x) {
         const double u = std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x);
         const double du = std::sqrt(2 / kPi) * (1 + 3 * 0.044715 * x * x);
         return 0.5 * (1 + std::tanh(u)) + 0.5 * x * du / std::pow(std::cosh(u), 2);
       }},
      {"silu", [](const Tensor& x) { return silu(x); },
       [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::silu_backward(g, x); },
       [](double x) { return x * sigmoid_ref(x); },
       [](double x) { return sigmoid_ref(x) + x * sigmoid_ref(x) * (1 - sigmoid_ref(x)); }},
      {"elu", [](const Tensor& x) { return elu(x, 1.5); },
       [](const Tensor& g, const Tensor& x, const Tensor&) { return ops::elu_backward(g, x, 1.5); },
       [](double x) { return x > 0 ? x : 1.5 * (std::exp(x) - 1); },
       [](double x) { return x > 0 ? 1.0 : 1.5 * std::exp(x); }},
      {"softplus", [](const Tensor& x) { return softplus(x); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::softplus_backward(g, x, 1.0, 20.0);
       },
       [](double x) { return std::log(1 + std::exp(x)); }, sigmoid_ref},
      // beta 2, threshold 3: inputs above 1.5 take the linear branch.
      {"softplus beta=2 threshold=3", [](const Tensor& x) { return softplus(x, 2.0, 3.0); },
       [](const Tensor& g, const Tensor& x, const Tensor&) {
         return ops::softplus_backward(g, x, 2.0, 3.0);
       },
       [](double x) { return 2 * x > 3 ? x : std::log(1 + std::exp(2 * x)) / 2; },
       [](double x) { return 2 * x > 3 ? 1.0 : sigmoid_ref(2 * x); }},
  };
  return s;
}

}  // namespace

TEST_CASE("activations and their backward ops match float64 references") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 gen(seed);
  for (const ActSpec& spec : act_specs())
    for (DType t : kFloatTypes)
      for (Layout layout : {Layout::contiguous, Layout::transposed, Layout::sliced})
        for (const Shape& shape : {Shape{5, 7}, Shape{1, 3, 4}, Shape{0, 3}}) {
          CAPTURE(spec.name);
          CAPTURE(t);
          CAPTURE(layout_name(layout));
          CAPTURE(shape);
          Tensor x = random_operand(shape, t, layout, -4, 4, gen);
          Tensor go = random_operand(shape, t, layout, -1, 1, gen);
          const std::vector<double> xv = x.to_vector<double>(), gv = go.to_vector<double>();
          std::vector<double> want(xv.size()), dwant(xv.size());
          for (size_t i = 0; i < xv.size(); ++i) {
            want[i] = spec.ref(xv[i]);
            dwant[i] = gv[i] * spec.dref(xv[i]);
          }
          Tensor y = spec.f(x);
          CHECK(y.dtype() == t);
          check_values(y, want, t);
          check_values(spec.backward(go, x, y), dwant, t);
        }
}

TEST_CASE("softplus keeps PyTorch's threshold and large inputs finite") {
  Tensor x = from_vector<double>({-50, 0, 10, 25, 200});
  std::vector<double> want = {std::log1p(std::exp(-50.0)), std::log(2.0),
                              std::log1p(std::exp(10.0)), 25, 200};
  check_values(softplus(x), want, kFloat64);
}

TEST_CASE("dropout draws its mask as a bernoulli fill of 1 - p") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (DType t : kFloatTypes)
    for (double p : {0.1, 0.5, 0.8}) {
      CAPTURE(t);
      CAPTURE(p);
      Tensor x = random_operand({37, 41}, t, Layout::transposed, -2, 2, g);
      Generator gen(seed), ref_gen(seed);
      gen.set_state(seed, 7);
      ref_gen.set_state(seed, 7);
      Tensor y = dropout(x, p, true, &gen);
      Tensor mask = zeros(x.shape(), kFloat64);
      bernoulli_(mask, 1 - p, &ref_gen);
      CHECK(gen.offset() == ref_gen.offset());
      const std::vector<double> xv = x.to_vector<double>(), mv = mask.to_vector<double>();
      std::vector<double> want(xv.size());
      double kept = 0;
      for (size_t i = 0; i < xv.size(); ++i) {
        want[i] = mv[i] != 0 ? xv[i] / (1 - p) : 0.0;
        kept += mv[i];
      }
      check_values(y, want, t);
      CHECK(kept / xv.size() == doctest::Approx(1 - p).epsilon(0.1));
      // Same state, same output; the stream moved on, so the next call differs.
      gen.set_state(seed, 7);
      CHECK(dropout(x, p, true, &gen).to_vector<double>() == y.to_vector<double>());
      CHECK(dropout(x, p, true, &gen).to_vector<double>() != y.to_vector<double>());
    }
}

TEST_CASE("dropout rate over a large tensor, and its identity and zero cases") {
  Generator gen(fresh_seed());
  Tensor x = ones({200000});
  const double kept = ops::sum(ops::ne(dropout(x, 0.3, true, &gen), zeros({}))).item();
  CHECK(kept / 200000 == doctest::Approx(0.7).epsilon(0.01));
  const uint64_t before = gen.offset();
  CHECK(dropout(x, 0.0, true, &gen).is_same(x));
  CHECK(dropout(x, 0.7, false, &gen).is_same(x));
  CHECK(ops::sum(ops::abs(dropout(x, 1.0, true, &gen))).item() == 0.0);
  CHECK(gen.offset() == before);
}

TEST_CASE("linear matches a naive x w^T + b") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  struct Case {
    Shape x, w;
    bool bias;
  };
  for (DType t : kFloatTypes)
    for (const Case& c :
         {Case{{2, 3, 5}, {4, 5}, true}, Case{{7}, {3, 7}, true}, Case{{1, 6}, {1, 6}, false},
          Case{{0, 4}, {3, 4}, true}, Case{{5, 7, 3}, {2, 3}, false}})
      for (Layout layout : {Layout::contiguous, Layout::transposed}) {
        CAPTURE(t);
        CAPTURE(c.x);
        CAPTURE(c.w);
        CAPTURE(layout_name(layout));
        Tensor x = random_operand(c.x, t, layout, -1, 1, g);
        Tensor w = random_operand(c.w, t, layout, -1, 1, g);
        Tensor b = c.bias ? random_tensor({c.w[0]}, t, -1, 1, g) : Tensor();
        const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
        const std::vector<double> bv = c.bias ? b.to_vector<double>() : std::vector<double>();
        const int64_t in = c.w[1], out = c.w[0], rows = x.numel() / in;
        std::vector<double> want(rows * out);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t o = 0; o < out; ++o) {
            double acc = c.bias ? bv[o] : 0.0;
            for (int64_t k = 0; k < in; ++k) acc += xv[r * in + k] * wv[o * in + k];
            want[r * out + o] = acc;
          }
        Tensor y = linear(x, w, b);
        Shape ys = c.x;
        ys.back() = out;
        CHECK(y.shape() == ys);
        check_values(y, want, t);
      }
}

TEST_CASE("softmax and log_softmax match a naive reference over every dim") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (DType t : kFloatTypes)
    for (const Shape& shape :
         {Shape{3, 5, 7}, Shape{1, 3}, Shape{6}, Shape{2, 0, 3}, Shape{4, 130, 2}})
      for (int64_t dim = -1; dim < static_cast<int64_t>(shape.size()); ++dim)
        for (Layout layout : {Layout::contiguous, Layout::transposed}) {
          CAPTURE(t);
          CAPTURE(shape);
          CAPTURE(dim);
          CAPTURE(layout_name(layout));
          Tensor x = random_operand(shape, t, layout, -30, 30, g);
          Tensor go = random_tensor(shape, t, -1, 1, g);
          const std::vector<double> xv = x.to_vector<double>(), gv = go.to_vector<double>();
          const int64_t nd = static_cast<int64_t>(shape.size()), d = dim < 0 ? dim + nd : dim;
          std::vector<double> sm(xv.size()), lsm(xv.size()), dsm(xv.size()), dlsm(xv.size());
          for (size_t i = 0; i < xv.size(); ++i) {
            // The softmax line through element i: same index except along d.
            std::vector<int64_t> idx = unravel(static_cast<int64_t>(i), shape);
            std::vector<size_t> line;
            for (int64_t k = 0; k < shape[d]; ++k) {
              idx[d] = k;
              int64_t lin = 0;
              for (int64_t q = 0; q < nd; ++q) lin = lin * shape[q] + idx[q];
              line.push_back(static_cast<size_t>(lin));
            }
            double mx = -INFINITY, z = 0, gdot = 0, gsum = 0;
            for (size_t j : line) mx = std::max(mx, xv[j]);
            for (size_t j : line) z += std::exp(xv[j] - mx);
            for (size_t j : line) {
              gdot += gv[j] * std::exp(xv[j] - mx) / z;
              gsum += gv[j];
            }
            sm[i] = std::exp(xv[i] - mx) / z;
            lsm[i] = xv[i] - mx - std::log(z);
            dsm[i] = sm[i] * (gv[i] - gdot);
            dlsm[i] = gv[i] - sm[i] * gsum;
          }
          Tensor y = softmax(x, dim), ly = log_softmax(x, dim);
          check_values(y, sm, t);
          check_values(ly, lsm, t);
          check_values(ops::softmax_backward(go, y, dim), dsm, t);
          check_values(ops::log_softmax_backward(go, ly, dim), dlsm, t);
        }
}

TEST_CASE("softmax subtracts the max: huge logits stay finite") {
  Tensor x = from_vector<float>({1000.f, 1001.f, 1002.f});
  const double z = 1 + std::exp(-1.0) + std::exp(-2.0);
  check_values(softmax(x, 0), {std::exp(-2.0) / z, std::exp(-1.0) / z, 1 / z}, kFloat32);
  check_values(log_softmax(x, -1), {-2 - std::log(z), -1 - std::log(z), -std::log(z)}, kFloat32);
  check_values(softmax(full({}, 3.0, kFloat64), 0), {1.0}, kFloat64);
}

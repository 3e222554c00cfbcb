// The NN functions through gradcheck (float64 central differences): batch norm in both modes,
// every activation, dropout with a replayed generator state, linear, softmax/log_softmax and
// every loss in every reduction.
#include <doctest/doctest.h>

#include <functional>
#include <random>

#include "autograd/activation.h"
#include "autograd/batch_norm.h"
#include "autograd/dropout.h"
#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "autograd/linear.h"
#include "autograd/loss.h"
#include "autograd/softmax.h"
#include "runtime/rng.h"

using namespace ember;

namespace {

using V = const std::vector<Tensor>&;

struct Spec {
  const char* name;
  std::vector<Shape> shapes;
  std::function<Tensor(V)> f;
  double low = -2.0, high = 2.0;
  bool away_from_zero = false;  // |x| >= 0.2 (for functions with a kink at 0)
};

Tensor random_leaf(const Shape& s, const Spec& spec, Generator& g) {
  Tensor t = empty(s, kFloat64);
  uniform_(t, spec.low, spec.high, &g);
  if (spec.away_from_zero) {
    std::vector<double> v = t.to_vector<double>();
    for (double& x : v) x = x < 0 ? x - 0.2 : x + 0.2;
    t = from_vector(v, s);
  }
  requires_grad_(t);
  return t;
}

void run_specs(const std::vector<Spec>& specs, uint64_t seed) {
  Generator gen(seed);
  for (const Spec& spec : specs) {
    const std::string name = spec.name;
    CAPTURE(name);
    CAPTURE(seed);
    std::vector<Tensor> inputs;
    for (const Shape& s : spec.shapes) inputs.push_back(random_leaf(s, spec, gen));
    std::string why;
    const bool ok = gradcheck(spec.f, inputs, {}, &why);
    CAPTURE(why);
    CHECK(ok);
  }
}

Tensor targets(const std::vector<int64_t>& v, const Shape& s) {
  return from_vector(v, s);
}

}  // namespace

TEST_CASE("gradcheck batch_norm in training and eval mode") {
  const uint64_t seed = std::random_device{}();
  Tensor rm = zeros({3}, kFloat64), rv = ones({3}, kFloat64);
  Tensor rm_eval = from_vector<double>({0.3, -0.2, 0.1}),
         rv_eval = from_vector<double>({0.5, 1.5, 2});
  run_specs(
      {
          {"train affine [4, 3]",
           {{4, 3}, {3}, {3}},
           [&](V x) { return batch_norm(x[0], x[1], x[2], rm, rv, true); }},
          {"train affine [2, 3, 2, 3]",
           {{2, 3, 2, 3}, {3}, {3}},
           [&](V x) { return batch_norm(x[0], x[1], x[2], rm, rv, true, 0.1, 1e-3); }},
          {"train no affine, no running stats [3, 3, 5]",
           {{3, 3, 5}},
           [&](V x) { return batch_norm(x[0], Tensor(), Tensor(), Tensor(), Tensor(), true); }},
          {"train batch 1 [1, 3, 4]",
           {{1, 3, 4}, {3}},
           [&](V x) { return batch_norm(x[0], x[1], Tensor(), rm, rv, true); }},
          {"train non-contiguous",
           {{3, 4, 3}, {3}, {3}},
           [&](V x) { return batch_norm(transpose(x[0], 1, 2), x[1], x[2], rm, rv, true); }},
          {"eval affine [2, 3, 5]",
           {{2, 3, 5}, {3}, {3}},
           [&](V x) { return batch_norm(x[0], x[1], x[2], rm_eval, rv_eval, false); }},
          {"eval no affine [4, 3]",
           {{4, 3}},
           [&](V x) { return batch_norm(x[0], Tensor(), Tensor(), rm_eval, rv_eval, false); }},
      },
      seed);
}

TEST_CASE("gradcheck every activation") {
  const uint64_t seed = std::random_device{}();
  Spec relu_s{"relu", {{3, 5}}, [](V x) { return relu(x[0]); }};
  relu_s.away_from_zero = true;
  Spec leaky{"leaky_relu", {{3, 5}}, [](V x) { return leaky_relu(x[0], 0.1); }};
  leaky.away_from_zero = true;
  Spec elu_s{"elu alpha 1.5", {{3, 5}}, [](V x) { return elu(x[0], 1.5); }};
  elu_s.away_from_zero = true;
  Spec relu_t{
      "relu of a transposed view", {{4, 3}}, [](V x) { return relu(transpose(x[0], 0, 1)); }};
  relu_t.away_from_zero = true;
  run_specs(
      {
          relu_s,
          leaky,
          elu_s,
          relu_t,
          {"sigmoid", {{3, 5}}, [](V x) { return sigmoid(x[0]); }, -4, 4},
          {"tanh", {{3, 5}}, [](V x) { return ember::tanh(x[0]); }},
          {"gelu", {{3, 5}}, [](V x) { return gelu(x[0]); }, -3, 3},
          {"gelu tanh", {{3, 5}}, [](V x) { return gelu(x[0], GeluApproximate::Tanh); }, -3, 3},
          {"silu", {{3, 5}}, [](V x) { return silu(x[0]); }, -4, 4},
          {"softplus", {{3, 5}}, [](V x) { return softplus(x[0]); }, -4, 4},
          {"softplus beta 2", {{3, 5}}, [](V x) { return softplus(x[0], 2.0, 20.0); }, -3, 3},
      },
      seed);
}

TEST_CASE("gradcheck dropout with the generator state replayed") {
  const uint64_t seed = std::random_device{}();
  Generator gen(seed);
  run_specs(
      {
          {"dropout p 0.4",
           {{6, 7}},
           [&](V x) {
             gen.set_state(seed, 3);  // the same mask on every evaluation
             return dropout(x[0], 0.4, true, &gen);
           }},
          {"dropout eval", {{5}}, [&](V x) { return dropout(x[0], 0.4, false, &gen) * 2.0; }},
          {"dropout p 1", {{5}}, [&](V x) { return dropout(x[0], 1.0, true, &gen); }},
      },
      seed);
}

TEST_CASE("gradcheck linear and softmax") {
  const uint64_t seed = std::random_device{}();
  Tensor const_x = rand({2, 3, 4}, kFloat64);
  run_specs(
      {
          {"linear", {{3, 4}, {5, 4}, {5}}, [](V x) { return linear(x[0], x[1], x[2]); }},
          {"linear batched, no bias", {{2, 3, 4}, {2, 4}}, [](V x) { return linear(x[0], x[1]); }},
          {"linear 1-D input", {{4}, {3, 4}, {3}}, [](V x) { return linear(x[0], x[1], x[2]); }},
          {"linear transposed operands",
           {{4, 3}, {4, 5}},
           [](V x) { return linear(transpose(x[0], 0, 1), transpose(x[1], 0, 1)); }},
          {"linear constant input",
           {{5, 4}, {5}},
           [&](V x) { return linear(const_x, x[0], x[1]); }},
          {"softmax last", {{3, 5}}, [](V x) { return softmax(x[0], -1); }},
          {"softmax middle", {{2, 4, 3}}, [](V x) { return softmax(x[0], 1); }},
          {"log_softmax first", {{4, 3}}, [](V x) { return log_softmax(x[0], 0); }},
          {"log_softmax middle", {{2, 3, 5}}, [](V x) { return log_softmax(x[0], 1); }},
      },
      seed);
}

TEST_CASE("gradcheck every loss in every reduction") {
  const uint64_t seed = std::random_device{}();
  Tensor t2 = targets({2, 0, -100, 1}, {4});
  Tensor t3 = targets({0, 2, 1, 1, -100, 0}, {2, 3});
  Tensor t_ign = targets({1, 3, 1}, {3});  // ignore_index 1
  std::vector<Spec> specs;
  for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    specs.push_back(
        {"cross_entropy [4, 3]", {{4, 3}}, [=](V x) { return cross_entropy(x[0], t2, -100, r); }});
    specs.push_back({"cross_entropy smoothing [4, 3]", {{4, 3}}, [=](V x) {
                       return cross_entropy(x[0], t2, -100, r, 0.3);
                     }});
    specs.push_back({"cross_entropy [2, 3, 3] smoothing", {{2, 3, 3}}, [=](V x) {
                       return cross_entropy(x[0], t3, -100, r, 0.1);
                     }});
    specs.push_back({"cross_entropy ignore_index 1", {{3, 4}}, [=](V x) {
                       return cross_entropy(x[0], t_ign, 1, r, 0.2);
                     }});
    specs.push_back(
        {"nll_loss [4, 3]", {{4, 3}}, [=](V x) { return nll_loss(x[0], t2, -100, r); }});
    specs.push_back({"nll_loss [2, 3, 3] of log_softmax", {{2, 3, 3}}, [=](V x) {
                       return nll_loss(log_softmax(x[0], 1), t3, -100, r);
                     }});
    specs.push_back({"mse_loss", {{3, 4}, {3, 4}}, [=](V x) { return mse_loss(x[0], x[1], r); }});
  }
  run_specs(specs, seed);
}

TEST_CASE("linear and batch_norm gradients flow only where needed") {
  Tensor x = rand({3, 4}, kFloat64), w = rand({2, 4}, kFloat64);
  requires_grad_(w);
  Tensor loss = sum(linear(x, w));
  backward(loss);
  // d sum(x w^T) / dw[o, k] = sum over rows of x[:, k].
  std::vector<double> xv = x.to_vector<double>(), gw = grad(w).to_vector<double>();
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t k = 0; k < 4; ++k)
      CHECK(gw[o * 4 + k] == doctest::Approx(xv[k] + xv[4 + k] + xv[8 + k]));
  // A batch-norm output summed has zero input gradient in training (the mean absorbs it).
  Tensor b = rand({5, 3}, kFloat64);
  requires_grad_(b);
  backward(sum(batch_norm(b, Tensor(), Tensor(), Tensor(), Tensor(), true)));
  for (double v : grad(b).to_vector<double>()) CHECK(std::abs(v) < 1e-12);
}

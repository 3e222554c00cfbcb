// Module: registration, traversal names, train/eval, device and dtype moves, state dicts.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "nn/linear.h"

using namespace ember;
using namespace ember::nn;

namespace {
std::shared_ptr<Sequential> two_layer() {
  return std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Flatten>(), std::make_shared<Linear>(6, 4), std::make_shared<Linear>(4, 2, false)});
}
std::vector<std::string> names(const NamedTensors& v) {
  std::vector<std::string> out;
  for (auto& [n, t] : v) out.push_back(n);
  return out;
}
}  // namespace

TEST_CASE("parameters have PyTorch-style dotted names") {
  auto m = two_layer();
  CHECK(names(m->named_parameters()) == std::vector<std::string>{"1.weight", "1.bias", "2.weight"});
  CHECK(m->parameters().size() == 3);
  for (const Tensor& p : m->parameters()) CHECK(p.requires_grad());
  auto mods = m->named_modules();
  REQUIRE(mods.size() == 4);
  CHECK(mods[2].first == "1");
  CHECK(m->repr().find("(1): Linear(in_features=6, out_features=4, bias=True)") != std::string::npos);
}

TEST_CASE("Linear computes x W^T + b and is initialised within PyTorch's bounds") {
  Linear lin(3, 2);
  auto w = lin.weight.to_vector<float>();
  auto b = lin.bias.to_vector<float>();
  const double bound = 1.0 / std::sqrt(3.0);  // kaiming_uniform(a=sqrt(5)) gives 1/sqrt(fan_in)
  for (float v : w) CHECK(std::fabs(v) <= bound + 1e-6);
  for (float v : b) CHECK(std::fabs(v) <= bound + 1e-6);
  Tensor x = from_vector<float>({1, 2, 3, -1, 0, 4}, {2, 3});
  std::vector<float> y = lin(x).to_vector<float>();
  std::vector<float> xv = x.to_vector<float>();
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 2; ++o) {
      double ref = b[o];
      for (int i = 0; i < 3; ++i) ref += double(xv[n * 3 + i]) * w[o * 3 + i];
      CHECK(y[n * 2 + o] == doctest::Approx(ref).epsilon(1e-6));
    }
  CHECK_THROWS_AS(lin(zeros({2, 4})), ShapeError);
  CHECK_THROWS_AS(Linear(0, 3), ValueError);
}

TEST_CASE("state dicts round-trip and bad ones are refused without changing anything") {
  auto a = two_layer();
  auto b = two_layer();
  NamedTensors sd = a->state_dict();
  b->load_state_dict(sd);
  for (size_t i = 0; i < sd.size(); ++i)
    CHECK(b->state_dict()[i].second.to_vector<float>() == sd[i].second.to_vector<float>());
  // The layer's own handle sees the loaded values.
  auto lin = std::dynamic_pointer_cast<Linear>((*b)[1]);
  CHECK(lin->weight.to_vector<float>() == sd[0].second.to_vector<float>());

  auto c = two_layer();
  std::vector<float> before = c->state_dict()[0].second.to_vector<float>();
  NamedTensors missing(sd.begin(), sd.end() - 1);
  try {
    c->load_state_dict(missing);
    FAIL("expected ValueError");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("Missing keys: '2.weight'") != std::string::npos);
  }
  CHECK(c->state_dict()[0].second.to_vector<float>() == before);
  LoadResult r = c->load_state_dict(missing, /*strict=*/false);
  CHECK(r.missing_keys == std::vector<std::string>{"2.weight"});
  NamedTensors extra = sd;
  extra.emplace_back("3.weight", zeros({1}));
  CHECK_THROWS_AS(c->load_state_dict(extra), ValueError);
  CHECK(c->load_state_dict(extra, false).unexpected_keys == std::vector<std::string>{"3.weight"});
  NamedTensors wrong = sd;
  wrong[0].second = zeros({4, 7});
  try {
    c->load_state_dict(wrong);
    FAIL("expected ShapeError");
  } catch (const ShapeError& e) {
    std::string m = e.what();
    CHECK(m.find("1.weight") != std::string::npos);
    CHECK(m.find("[4, 7]") != std::string::npos);
    CHECK(m.find("[4, 6]") != std::string::npos);
  }
}

TEST_CASE("train/eval, zero_grad and dtype moves") {
  auto m = two_layer();
  CHECK(m->is_training());
  m->eval();
  for (auto& [n, c] : m->named_modules()) CHECK_FALSE(c->is_training());
  m->train();
  Tensor x = ones({5, 2, 3});
  backward(sum((*m)(x)));
  for (const Tensor& p : m->parameters()) CHECK(grad(p).defined());
  m->zero_grad();
  for (const Tensor& p : m->parameters()) CHECK_FALSE(grad(p).defined());
  m->to(kFloat64);
  auto lin = std::dynamic_pointer_cast<Linear>((*m)[1]);
  CHECK(lin->weight.dtype() == kFloat64);
  CHECK(lin->weight.requires_grad());
  CHECK((*m)(ones({1, 6}, kFloat64)).dtype() == kFloat64);
}

// Models and layers: output shapes, parameter names and counts, train/eval behaviour.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "nn/models.h"
#include "runtime/rng.h"

using namespace ember;
using namespace ember::nn;

namespace {
int64_t count_params(Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters()) n += p.numel();
  return n;
}
}  // namespace

TEST_CASE("every model maps a batch to class scores and backpropagates") {
  struct Case { const char* name; ModelSpec spec; };
  const Case cases[] = {{"mlp", {1, 8, 10}},      {"lenet", {1, 8, 10}},  {"lenet", {1, 28, 10}},
                        {"resnet20", {3, 32, 10}}, {"vgg_small", {3, 32, 7}}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    CAPTURE(c.spec.image_size);
    ModulePtr m = make_model(c.name, c.spec);
    Tensor x = randn({2, c.spec.in_channels, c.spec.image_size, c.spec.image_size});
    Tensor y = (*m)(x);
    CHECK(y.shape() == Shape{2, c.spec.num_classes});
    backward(sum(y));
    for (auto& [n, p] : m->named_parameters()) {
      CAPTURE(n);
      CHECK(grad(p).defined());
    }
  }
  CHECK_THROWS_AS(make_model("alexnet", {}), ValueError);
}

TEST_CASE("parameter names and counts follow the architectures") {
  // Counts derived by hand from the layer shapes.
  ModulePtr lenet5 = lenet({1, 28, 10});
  CHECK(count_params(*lenet5) == (6 * 25 + 6) + (16 * 6 * 25 + 16) + (400 * 120 + 120) +
                                     (120 * 84 + 84) + (84 * 10 + 10));
  CHECK(lenet5->named_parameters()[0].first == "features.0.weight");
  ModulePtr r = resnet20({3, 32, 10});
  auto names = r->named_parameters();
  CHECK(names[0].first == "conv1.weight");
  bool has_shortcut = false;
  for (auto& [n, p] : names) has_shortcut |= n == "layer2.0.shortcut.0.weight";
  CHECK(has_shortcut);
  // 3x3 convs: 16*3*9 + stage1 6*(16*16*9) + stage2 (16*32*9 + 5*32*32*9) + stage3 (32*64*9 +
  // 5*64*64*9); projections 16*32 + 32*64; BN: 2 per channel; fc 64*10 + 10.
  int64_t convs = 16 * 3 * 9 + 6 * 16 * 16 * 9 + (16 * 32 * 9 + 5 * 32 * 32 * 9) +
                  (32 * 64 * 9 + 5 * 64 * 64 * 9) + 16 * 32 + 32 * 64;
  int64_t bns = 2 * (16 + 6 * 16 + 7 * 32 + 7 * 64);
  CHECK(count_params(*r) == convs + bns + 64 * 10 + 10);
}

TEST_CASE("resnet50 and vgg16: torchvision's parameter counts and names, and a training step") {
  // The counts torchvision publishes at 1000 classes, less its classifier's last layer
  // (in * 1000 + 1000) plus ours at 10 classes: ResNet-50's fc has 2048 inputs, VGG-16's 4096.
  struct Case {
    const char* name;
    int64_t published, fc_in;
    const char* some_names[3];
  };
  const Case cases[] = {
      {"resnet50", 25557032, 2048, {"conv1.weight", "layer1.0.downsample.0.weight", "fc.bias"}},
      {"vgg16", 138357544, 4096, {"features.0.weight", "features.28.bias", "classifier.6.weight"}}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    ModulePtr m = make_model(c.name, {3, 32, 10});
    CHECK(count_params(*m) == c.published - (c.fc_in * 1000 + 1000) + (c.fc_in * 10 + 10));
    auto named = m->named_parameters();
    for (const char* want : c.some_names) {
      CAPTURE(want);
      bool found = false;
      for (auto& [n, p] : named) found |= n == want;
      CHECK(found);
    }
    Tensor y = (*m)(randn({2, 3, 32, 32}));
    CHECK(y.shape() == Shape{2, 10});
    backward(sum(y));
    for (auto& [n, p] : named) {
      CAPTURE(n);
      CHECK(grad(p).defined());
    }
    CHECK_THROWS_AS(make_model(c.name, {3, 16, 10}), ValueError);  // below 32x32
  }
}

TEST_CASE("BatchNorm2d uses batch statistics in training and running ones in eval") {
  BatchNorm2d bn(2);
  Tensor x = from_vector<float>({1, 2, 3, 4, 10, 20, 30, 40}, {2, 2, 1, 2});
  // Channel 0 holds 1, 2, 10, 20 (mean 8.25); channel 1 holds 3, 4, 30, 40 (mean 19.25).
  Tensor y = bn(x);
  auto rm = bn.running_mean.to_vector<float>();
  CHECK(rm[0] == doctest::Approx(0.1 * 8.25));
  CHECK(rm[1] == doctest::Approx(0.1 * 19.25));
  CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
  double mean0 = y.select(1, 0).to(kFloat64).to_vector<double>()[0];
  CHECK(mean0 < 0);  // 1 is below the channel mean
  bn.eval();
  Tensor ye = bn(x);
  // eval: (x - running_mean) / sqrt(running_var + eps)
  double rv0 = bn.running_var.to_vector<float>()[0];
  CHECK(ye.to_vector<float>()[0] == doctest::Approx((1 - rm[0]) / std::sqrt(rv0 + 1e-5)).epsilon(1e-5));
  CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
  CHECK_THROWS_AS(bn(zeros({2, 3, 1, 1})), ShapeError);
}

TEST_CASE("Dropout is identity in eval and reproducible in training") {
  Generator g1(5), g2(5);
  Dropout d1(0.5, &g1), d2(0.5, &g2);
  Tensor x = ones({1000});
  CHECK(d1(x).to_vector<float>() == d2(x).to_vector<float>());
  int zeros_seen = 0;
  for (float v : d1(x).to_vector<float>()) {
    CHECK((v == 0.0f || v == 2.0f));
    zeros_seen += v == 0.0f;
  }
  CHECK(zeros_seen > 400);
  CHECK(zeros_seen < 600);
  d1.eval();
  CHECK(d1(x).to_vector<float>() == x.to_vector<float>());
  CHECK_THROWS_AS(Dropout(1.5), ValueError);
}

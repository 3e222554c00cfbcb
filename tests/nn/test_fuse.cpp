// fuse_for_inference (nn/fuse.h): batch norm folded into the convolution before it gives the
// unfused model's outputs (within 1e-5 relative) on ResNet-20, the small VGG and a plain
// Sequential, on the cpu and on the emulator, with random running statistics and affine
// parameters; and what it refuses: a model in training mode, training a folded batch norm, a
// pairing the example input shows to be wrong (the model is restored).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "nn/conv.h"
#include "nn/fuse.h"
#include "nn/layers.h"
#include "nn/models.h"
#include "runtime/rng.h"

using namespace ember;
using namespace ember::nn;

namespace {

// Gives every batch norm running statistics and affine parameters far from the defaults, so
// that folding has something to fold.
void randomise_batch_norms(Module& m) {
  NoGradGuard no_grad;
  for (auto& [name, mod] : m.named_modules()) {
    auto bn = std::dynamic_pointer_cast<BatchNorm2d>(mod);
    if (!bn) continue;
    const Shape c{bn->num_features};
    bn->running_mean.copy_(randn(c));
    bn->running_var.copy_(add(mul(rand(c), 2.0), 0.1));
    if (bn->weight.defined()) bn->weight.copy_(add(randn(c), 1.0));
    if (bn->bias.defined()) bn->bias.copy_(randn(c));
  }
}

double rel_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to(kFloat64).to(kCPU).to_vector<double>();
  const std::vector<double> y = b.to(kFloat64).to(kCPU).to_vector<double>();
  double d = 0, m = 0;
  for (size_t i = 0; i < y.size(); ++i)
    d = std::max(d, std::abs(x[i] - y[i])), m = std::max(m, std::abs(y[i]));
  return d / m;
}

int count_batch_norms(Module& m) {
  int n = 0;
  for (auto& [name, mod] : m.named_modules())
    n += std::dynamic_pointer_cast<BatchNorm2d>(mod) != nullptr;
  return n;
}

}  // namespace

TEST_CASE("fuse_for_inference: the fused models give the models' outputs on cpu and emu") {
  struct Case {
    const char* model;
    Device device;
    int64_t image;
  };
  const Case cases[] = {
      {"resnet20", kCPU, 16}, {"vgg_small", kCPU, 16}, {"resnet20", Device(DeviceType::EMU, 0), 8}};
  for (const Case& c : cases) {
    CAPTURE(c.model);
    CAPTURE(c.device);
    manual_seed(11);
    ModulePtr m = make_model(c.model, {3, c.image, 10});
    randomise_batch_norms(*m);
    m->to(c.device);
    m->eval();
    const Tensor x = randn({3, 3, c.image, c.image}).to(c.device);
    NoGradGuard no_grad;
    const Tensor want = m->forward(x);
    const FuseReport r = fuse_for_inference(*m);
    CHECK(static_cast<int>(r.fused.size()) == count_batch_norms(*m));
    CHECK(r.skipped.empty());
    // The small VGG's features are a Sequential of conv, batch norm, ReLU: each ReLU moves into
    // its convolution. ResNet-20 applies relu in its blocks' code: nothing to move.
    CHECK(r.relu.empty() == (std::string(c.model) == "resnet20"));
    const Tensor got = m->forward(x);
    CHECK(rel_diff(got, want) <= 1e-5);
    // Folding twice changes nothing: the batch norms say they are folded already.
    const FuseReport again = fuse_for_inference(*m);
    CHECK(again.fused.empty());
    CHECK(again.skipped.size() == r.fused.size());
    CHECK(rel_diff(m->forward(x), want) <= 1e-5);
  }
}

TEST_CASE("fuse_for_inference: a bias-less convolution gets one; the names of the pairs") {
  manual_seed(3);
  auto seq = std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Conv2d>(3, 8, 3, Conv2dOptions{}, /*bias=*/false),
      std::make_shared<BatchNorm2d>(8), ReLU(), std::make_shared<BatchNorm2d>(8),
      std::make_shared<Conv2d>(8, 4, 1), std::make_shared<BatchNorm2d>(4, 1e-5, 0.1, false)});
  randomise_batch_norms(*seq);
  seq->eval();
  const Tensor x = randn({2, 3, 7, 9});
  NoGradGuard no_grad;
  const Tensor want = seq->forward(x);
  const FuseReport r = fuse_for_inference(*seq, x);
  CHECK(r.fused == std::vector<std::string>{"0+1", "4+5"});
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0] == "3: not registered right after a Conv2d");
  CHECK(std::dynamic_pointer_cast<Conv2d>((*seq)[0])->bias.defined());
  CHECK(rel_diff(seq->forward(x), want) <= 1e-5);
  const auto names = seq->named_parameters();
  CHECK(std::any_of(names.begin(), names.end(), [](const auto& p) { return p.first == "0.bias"; }));
}

TEST_CASE("fuse_for_inference: training mode, training a folded model, a wrong pairing") {
  manual_seed(5);
  ModulePtr m = make_model("resnet20", {3, 8, 10});
  try {
    fuse_for_inference(*m);
    FAIL("expected a ValueError");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("expected a model in eval mode") != std::string::npos);
  }
  m->eval();
  fuse_for_inference(*m);
  m->train();
  try {
    m->forward(randn({2, 3, 8, 8}));
    FAIL("expected a ValueError");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("runs in eval mode only") != std::string::npos);
  }

  // A block whose forward normalises the input, not the convolution's output: the example shows
  // it, and the model is restored.
  struct NormFirst : Module {
    std::shared_ptr<Conv2d> conv = register_module("conv", std::make_shared<Conv2d>(4, 4, 3));
    std::shared_ptr<BatchNorm2d> bn = register_module("bn", std::make_shared<BatchNorm2d>(4));
    Tensor forward(const Tensor& x) override { return conv->forward(bn->forward(x)); }
    std::string name() const override { return "NormFirst"; }
  };
  auto block = std::make_shared<NormFirst>();
  randomise_batch_norms(*block);
  block->eval();
  const Tensor x = randn({2, 4, 6, 6});
  NoGradGuard no_grad;
  const Tensor want = block->forward(x);
  const std::vector<double> w0 = block->conv->weight.to_vector<double>();
  try {
    fuse_for_inference(*block, x);
    FAIL("expected a ValueError");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("the model is left as it was (pairs tried: conv+bn)") !=
          std::string::npos);
  }
  CHECK_FALSE(block->bn->folded);
  CHECK(block->conv->weight.to_vector<double>() == w0);
  CHECK(block->forward(x).to_vector<double>() == want.to_vector<double>());
}

TEST_CASE("fuse_for_inference: ReLUs move into the convolution before them in a Sequential") {
  manual_seed(8);
  auto seq = std::make_shared<Sequential>(
      std::vector<ModulePtr>{std::make_shared<Conv2d>(3, 6, 3), std::make_shared<BatchNorm2d>(6),
                             ReLU(), std::make_shared<Conv2d>(6, 5, 1), ReLU(), Sigmoid(),
                             std::make_shared<Conv2d>(5, 4, 1), Sigmoid()});
  randomise_batch_norms(*seq);
  seq->eval();
  const Tensor x = randn({2, 3, 9, 8});
  NoGradGuard no_grad;
  const Tensor want = seq->forward(x);
  const FuseReport r = fuse_for_inference(*seq, x);
  CHECK(r.fused == std::vector<std::string>{"0+1"});
  CHECK(r.relu == std::vector<std::string>{"0+2", "3+4"});
  CHECK(std::dynamic_pointer_cast<Conv2d>((*seq)[0])->fused_relu);
  CHECK_FALSE(std::dynamic_pointer_cast<Conv2d>((*seq)[6])->fused_relu);  // a Sigmoid follows
  CHECK(seq->repr().find("folded") != std::string::npos);
  CHECK(rel_diff(seq->forward(x), want) <= 1e-5);
}

TEST_CASE("fuse_for_inference: a moved ReLU still trains (outside no_grad, conv then relu)") {
  manual_seed(9);
  auto seq = std::make_shared<Sequential>(
      std::vector<ModulePtr>{std::make_shared<Conv2d>(2, 3, 3), ReLU()});
  auto conv = std::dynamic_pointer_cast<Conv2d>((*seq)[0]);
  const Tensor x = randn({2, 2, 6, 6});
  const Tensor want = seq->forward(x);
  backward(sum(want));
  const std::vector<double> gw = grad(conv->weight).to_vector<double>();
  conv->zero_grad();
  seq->eval();
  fuse_for_inference(*seq);
  seq->train();
  const Tensor got = seq->forward(x);
  CHECK(got.to_vector<double>() == want.to_vector<double>());
  backward(sum(got));
  CHECK(grad(conv->weight).to_vector<double>() == gw);
}

// The C++ layers added beside the first set: their parameter and buffer names (PyTorch's), their
// forward passes against the functions they are made of, their argument checks, the
// containers, the loss modules and MultiheadAttention; layer_norm and group_norm under autocast.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/autocast.h"
#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/interpolate.h"
#include "autograd/layer_norm.h"
#include "autograd/pad.h"
#include "autograd/softmax.h"
#include "nn/attention.h"
#include "nn/containers.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "nn/loss.h"
#include "nn/normalization.h"
#include "nn/upsample.h"

using namespace ember;
using namespace ember::nn;

namespace {

std::vector<std::string> keys(const NamedTensors& v) {
  std::vector<std::string> out;
  for (auto& [n, t] : v) out.push_back(n);
  return out;
}

void check_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  REQUIRE(a.shape() == b.shape());
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) CHECK(x[i] == doctest::Approx(y[i]).epsilon(tol));
}

}  // namespace

TEST_CASE("Conv2d: rectangular kernels, padding modes and the existing constructor") {
  Conv2d square(3, 4, 3, Conv2dOptions().padding(1));  // the int kernel_size still works
  CHECK(square.kernel_size == std::array<int64_t, 2>{3, 3});
  CHECK(square.weight.shape() == Shape{4, 3, 3, 3});
  const Tensor x = randn({2, 3, 6, 7});
  for (const char* mode : {"zeros", "reflect", "replicate", "circular"}) {
    CAPTURE(mode);
    Conv2d c(3, 4, {2, 3}, Conv2dOptions().padding(1, 2).stride(2, 1), true, mode);
    CHECK(c.weight.shape() == Shape{4, 3, 2, 3});
    // PyTorch's rule: pad in the mode, then a convolution without padding.
    const Tensor want =
        std::string(mode) == "zeros"
            ? conv2d(x, c.weight, c.bias, Conv2dOptions().padding(1, 2).stride(2, 1))
            : conv2d(pad(x, {2, 2, 1, 1}, mode), c.weight, c.bias, Conv2dOptions().stride(2, 1));
    check_close(c.forward(x), want);
  }
  Conv2d same(3, 2, {4, 3}, Conv2dOptions().padding("same"), false, "reflect");
  CHECK(same.forward(x).shape() == Shape{2, 2, 6, 7});
  CHECK(same.extra_repr() ==
        "3, 2, kernel_size=(4, 3), stride=(1, 1), padding=same, bias=False, "
        "padding_mode=reflect");
  CHECK_THROWS_WITH_AS(Conv2d(3, 4, {3, 3}, Conv2dOptions(), true, "mirror"),
                       doctest::Contains("got 'mirror'"), ValueError);
  CHECK_THROWS_WITH_AS(Conv2d(3, 4, {3, 3}, Conv2dOptions(), true, "mirror"),
                       doctest::Contains("'zeros', 'reflect', 'replicate', 'circular'"),
                       ValueError);
  CHECK_THROWS_WITH_AS(Conv2d(3, 4, {3, 3}, Conv2dOptions().stride(2).padding("same")),
                       doctest::Contains("strided"), ValueError);
  CHECK_THROWS_AS(Conv2dOptions().padding("full"), ValueError);
}

TEST_CASE("Conv1d and ConvTranspose2d: shapes, output_size and checks") {
  Conv1d c1(4, 6, 3, Conv1dOptions().padding(1).stride(2), true, "circular");
  CHECK(keys(c1.named_parameters()) == std::vector<std::string>{"weight", "bias"});
  CHECK(c1.forward(randn({2, 4, 9})).shape() == Shape{2, 6, 5});
  ConvTranspose2d t(4, 6, {3, 3}, ConvTranspose2dOptions().stride(2).padding(1).groups(2));
  CHECK(t.weight.shape() == Shape{4, 3, 3, 3});
  const Tensor x = randn({1, 4, 5, 4});
  CHECK(t.forward(x).shape() == Shape{1, 6, 9, 7});
  CHECK(t.forward(x, {10, 8}).shape() == Shape{1, 6, 10, 8});
  CHECK_THROWS_WITH_AS(t.forward(x, {11, 8}), doctest::Contains("from 9 to 10"), ValueError);
  CHECK_THROWS_AS(ConvTranspose2d(4, 6, {3, 3}, ConvTranspose2dOptions(), true, "reflect"),
                  ValueError);
  CHECK_THROWS_AS(ConvTranspose2d(4, 6, {3, 3}, ConvTranspose2dOptions().output_padding(1)),
                  ValueError);
}

TEST_CASE("normalisation layers: PyTorch's names, running statistics and checks") {
  BatchNorm1d bn(3);
  CHECK(keys(bn.state_dict()) == std::vector<std::string>{"weight", "bias", "running_mean",
                                                          "running_var", "num_batches_tracked"});
  const Tensor x2 = randn({8, 3}), x3 = randn({4, 3, 5});
  check_close(bn.forward(x2), batch_norm(x2, bn.weight, bn.bias, Tensor(), Tensor(), true));
  CHECK(bn.num_batches_tracked.item() == 1);
  CHECK(bn.forward(x3).shape() == x3.shape());
  CHECK_THROWS_AS(bn.forward(randn({2, 3, 4, 5})), ShapeError);

  LayerNorm ln({4, 5}, 1e-3);
  CHECK(ln.weight.shape() == Shape{4, 5});
  check_close(ln.forward(x3.view({3, 4, 5})),
              layer_norm(x3.view({3, 4, 5}), {4, 5}, Tensor(), Tensor(), 1e-3));
  CHECK(ln.extra_repr() == "(4, 5), eps=0.001, elementwise_affine=True");
  CHECK(LayerNorm({7}, 1e-5, false).named_parameters().empty());

  GroupNorm gn(2, 6);
  CHECK(gn.forward(randn({2, 6, 3, 3})).shape() == Shape{2, 6, 3, 3});
  CHECK_THROWS_WITH_AS(GroupNorm(4, 6), doctest::Contains("divisible by num_groups"), ValueError);

  InstanceNorm2d in(3, 1e-5, 0.5, false, true);
  CHECK(keys(in.state_dict()) ==
        std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"});
  const Tensor x4 = add(mul(randn({2, 3, 4, 4}), 2.0), 1.0);
  in.forward(x4);
  // The running mean moves halfway to the batch mean of the instance means (momentum 0.5).
  const std::vector<double> rm = in.running_mean.to_vector<double>();
  const std::vector<double> means = mean(x4, {0, 2, 3}).to_vector<double>();
  for (int c = 0; c < 3; ++c) CHECK(rm[c] == doctest::Approx(0.5 * means[c]).epsilon(1e-5));
  in.eval();  // eval normalises with the running statistics
  check_close(in.forward(x4),
              batch_norm(x4, Tensor(), Tensor(), in.running_mean, in.running_var, false));
  CHECK(InstanceNorm2d(3).forward(randn({3, 4, 4})).shape() == Shape{3, 4, 4});  // unbatched
}

TEST_CASE("activation, dropout and resampling layers") {
  PReLU pr(3);
  CHECK(pr.weight.to_vector<float>() == std::vector<float>{0.25f, 0.25f, 0.25f});
  const Tensor x = from_vector<float>({-2, 3, -4, 5, -6, 7}, {1, 3, 2});
  CHECK(pr.forward(x).to_vector<float>() == std::vector<float>{-0.5f, 3, -1, 5, -1.5f, 7});
  CHECK(Hardswish()->forward(from_vector<float>({-4, 1, 4})).to_vector<float>() ==
        std::vector<float>{0, 1.0f * 4 / 6, 4});
  check_close(Softmax2d()->forward(x.view({3, 1, 2})), softmax(x.view({3, 1, 2}), 0));
  Dropout2d d(0.5);
  d.eval();
  CHECK(d.forward(x).impl() == x.impl());
  Upsample up({}, {2.0}, "bilinear", true);
  CHECK(up.forward(randn({1, 2, 3, 4})).shape() == Shape{1, 2, 6, 8});
  CHECK(up.extra_repr() == "scale_factor=2, mode='bilinear'");
  CHECK_THROWS_AS(Upsample({4}, {2.0}), ValueError);
  CHECK_THROWS_AS(Upsample({4}, {}, "nearest", true), ValueError);
  CHECK(PixelShuffle(2).forward(randn({1, 8, 2, 3})).shape() == Shape{1, 2, 4, 6});
  CHECK(PixelUnshuffle(2).forward(randn({1, 2, 4, 6})).shape() == Shape{1, 8, 2, 3});
}

TEST_CASE("ModuleList, ModuleDict and Identity register their modules by name") {
  auto list = std::make_shared<ModuleList>(
      std::vector<ModulePtr>{std::make_shared<Linear>(2, 3), std::make_shared<Identity>()});
  list->push_back(std::make_shared<Linear>(3, 1, false));
  CHECK(list->size() == 3);
  CHECK(keys(list->state_dict()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight"});
  CHECK_THROWS_AS((*list)[3], IndexError);
  CHECK_THROWS_AS(list->forward(randn({2})), ValueError);
  ModuleDict dict({{"enc", std::make_shared<Linear>(2, 2)}, {"id", std::make_shared<Identity>()}});
  dict.insert("enc", std::make_shared<Linear>(2, 2, false));  // replaces, keeps its place
  CHECK(dict.keys() == std::vector<std::string>{"enc", "id"});
  CHECK(keys(dict.state_dict()) == std::vector<std::string>{"enc.weight"});
  CHECK(dict.contains("id"));
  CHECK_THROWS_WITH_AS(dict["dec"], doctest::Contains("'dec'"), IndexError);
  const Tensor x = randn({3, 2});
  CHECK(Identity().forward(x).impl() == x.impl());
}

TEST_CASE("loss modules keep their weights as buffers and call their functions") {
  const Tensor w = from_vector<float>({1, 2, 0.5f});
  CrossEntropyLoss ce(w, 1, Reduction::Sum, 0.1);
  CHECK(keys(ce.state_dict()) == std::vector<std::string>{"weight"});
  const Tensor logits = randn({4, 3}), target = from_vector<int64_t>({0, 1, 2, 2});
  check_close(ce(logits, target), cross_entropy(logits, target, 1, Reduction::Sum, 0.1, w));
  BCEWithLogitsLoss bce(Tensor(), Reduction::Mean, w);
  CHECK(keys(bce.state_dict()) == std::vector<std::string>{"pos_weight"});
  const Tensor y = rand({4, 3});
  check_close(bce(logits, y), binary_cross_entropy_with_logits(logits, y, Tensor(), w));
  check_close(HuberLoss(Reduction::None, 0.5)(logits, y),
              huber_loss(logits, y, Reduction::None, 0.5));
  check_close(KLDivLoss("batchmean")(logits, y), kl_div(logits, y, "batchmean"));
  CHECK_THROWS_AS(KLDivLoss("average"), ValueError);
  Module& as_module = ce;  // a loss takes an input and a target
  CHECK_THROWS_AS(as_module.forward(logits), ValueError);
  const Tensor sign = from_vector<float>({1, -1, 1, -1});
  check_close(MarginRankingLoss(0.2).forward(logits.select(1, 0), logits.select(1, 1), sign),
              margin_ranking_loss(logits.select(1, 0), logits.select(1, 1), sign, 0.2));
}

TEST_CASE("MultiheadAttention: PyTorch's parameters and layouts") {
  MultiheadAttention mha(8, 2, 0.0, true, true);
  CHECK(keys(mha.state_dict()) == std::vector<std::string>{"in_proj_weight", "in_proj_bias",
                                                           "bias_k", "bias_v", "out_proj.weight",
                                                           "out_proj.bias"});
  CHECK(mha.in_proj_bias.to_vector<float>() == std::vector<float>(24, 0.0f));
  MultiheadAttention sep(8, 4, 0.0, false, false, false, 3, 5);
  CHECK(keys(sep.state_dict()) == std::vector<std::string>{"q_proj_weight", "k_proj_weight",
                                                           "v_proj_weight", "out_proj.weight"});
  const Tensor q = randn({4, 2, 8}), k = randn({6, 2, 3}), v = randn({6, 2, 5});
  auto [out, w] = sep.forward(q, k, v);
  CHECK(out.shape() == Shape{4, 2, 8});
  CHECK(w.shape() == Shape{2, 4, 6});
  // batch_first: the same computation on [N, L, E].
  MultiheadAttention bf(8, 4, 0.0, false, false, false, 3, 5, true);
  bf.load_state_dict(sep.state_dict());
  auto [out_bf, w_bf] = bf.forward(transpose(q, 0, 1), transpose(k, 0, 1), transpose(v, 0, 1),
                                   Tensor(), true, Tensor(), false);
  check_close(transpose(out_bf, 0, 1).contiguous(), out);
  CHECK(w_bf.shape() == Shape{2, 4, 4, 6});
  CHECK_THROWS_AS(MultiheadAttention(6, 4), ValueError);
  CHECK_THROWS_AS(sep.forward(q, k, v, Tensor(), true, zeros({4, 5}, kBool)), ShapeError);
}

TEST_CASE("layer_norm and group_norm run in float32 under autocast, as PyTorch's policy") {
  const Tensor x = randn({2, 4, 3}).to(kBFloat16);
  AutocastGuard guard("cpu", kBFloat16);
  CHECK(layer_norm(x, {3}).dtype() == kFloat32);
  CHECK(group_norm(x, 2).dtype() == kFloat32);
  CHECK(instance_norm(x).dtype() == kBFloat16);  // no entry: its input's dtype
  CHECK(autocast_policy("conv_transpose2d") == CastPolicy::lower_precision);
  CHECK(autocast_policy("huber_loss") == CastPolicy::fp32);
}

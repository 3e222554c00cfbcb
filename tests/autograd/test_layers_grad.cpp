// The layers' differentiable functions through gradcheck (float64 central differences), on the
// cpu and on the emulated GPU: layer, group and instance norm, pad in every mode,
// interpolate, conv_transpose2d, conv1d and conv2d's "same" padding, the new activations and
// prelu, pixel (un)shuffle, scaled-dot-product and multi-head attention, and the losses (class
// weights, probability targets, the regression and embedding losses) in every reduction.
#include <doctest/doctest.h>

#include <functional>
#include <random>

#include "autograd/activation.h"
#include "autograd/attention.h"
#include "autograd/conv2d.h"
#include "autograd/conv_transpose2d.h"
#include "autograd/dropout.h"
#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "autograd/interpolate.h"
#include "autograd/layer_norm.h"
#include "autograd/loss.h"
#include "autograd/pad.h"
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
  bool on_emu = true;           // also on emu:0 (float64 kernels of the GPU backend)
};

Tensor random_leaf(const Shape& s, const Spec& spec, Generator& g, Device dev) {
  Tensor t = empty(s, kFloat64);
  uniform_(t, spec.low, spec.high, &g);
  if (spec.away_from_zero) {
    std::vector<double> v = t.to_vector<double>();
    for (double& x : v) x = x < 0 ? x - 0.2 : x + 0.2;
    t = from_vector(v, s);
  }
  t = t.to(dev);
  requires_grad_(t);
  return t;
}

void run_specs(const std::vector<Spec>& specs, uint64_t seed) {
  for (Device dev : {Device(), Device(DeviceType::EMU, 0)}) {
    Generator gen(seed);
    for (const Spec& spec : specs) {
      if (dev.is_emu() && !spec.on_emu) continue;
      const std::string name = spec.name, device = dev.str();
      CAPTURE(name);
      CAPTURE(device);
      CAPTURE(seed);
      std::vector<Tensor> inputs;
      for (const Shape& s : spec.shapes) inputs.push_back(random_leaf(s, spec, gen, dev));
      std::string why;
      const bool ok = gradcheck(spec.f, inputs, {}, &why);
      CAPTURE(why);
      CHECK(ok);
    }
  }
}

Tensor on(const Tensor& t, const Tensor& like) {
  return t.to(like.device());
}

}  // namespace

TEST_CASE("gradcheck layer_norm, group_norm and instance_norm") {
  const uint64_t seed = std::random_device{}();
  run_specs(
      {
          {"layer_norm affine [3, 5]",
           {{3, 5}, {5}, {5}},
           [](V x) { return layer_norm(x[0], {5}, x[1], x[2]); }},
          {"layer_norm [2, 3, 4] over 2 dims, no affine",
           {{2, 3, 4}},
           [](V x) {
             return layer_norm(x[0], {3, 4}, Tensor(), Tensor(), 1e-3);
           }},
          {"layer_norm of a transposed view",
           {{4, 3}, {4}, {4}},
           [](V x) { return layer_norm(transpose(x[0], 0, 1), {4}, x[1], x[2]); }},
          {"group_norm [2, 6, 3]",
           {{2, 6, 3}, {6}, {6}},
           [](V x) { return group_norm(x[0], 3, x[1], x[2]); }},
          {"group_norm [3, 4] (a channel per element), weight only",
           {{3, 4}, {4}},
           [](V x) { return group_norm(x[0], 2, x[1], Tensor()); }},
          {"instance_norm [2, 3, 4]",
           {{2, 3, 4}, {3}, {3}},
           [](V x) { return instance_norm(x[0], Tensor(), Tensor(), x[1], x[2]); }},
          {"instance_norm eval with running stats",
           {{2, 3, 2, 2}},
           [](V x) {
             const Tensor rm = on(from_vector<double>({0.1, -0.3, 0.2}), x[0]);
             const Tensor rv = on(from_vector<double>({1.5, 0.7, 2.0}), x[0]);
             return instance_norm(x[0], rm, rv, Tensor(), Tensor(), false);
           }},
      },
      seed);
}

TEST_CASE("gradcheck pad in every mode, and interpolate") {
  const uint64_t seed = std::random_device{}();
  run_specs(
      {
          {"pad constant",
           {{2, 3, 4}},
           [](V x) {
             return pad(x[0], {1, -1, 2, 0}, "constant", 3.0);
           }},
          {"pad reflect",
           {{1, 2, 4, 5}},
           [](V x) {
             return pad(x[0], {2, 3, 3, 1}, "reflect");
           }},
          {"pad replicate",
           {{2, 3, 4}},
           [](V x) {
             return pad(x[0], {4, 1}, "replicate");
           }},
          {"pad circular 3 dims",
           {{1, 1, 3, 2, 3}},
           [](V x) {
             return pad(x[0], {1, 2, 2, 0, -1, 2}, "circular");
           }},
          {"interpolate nearest",
           {{1, 2, 3, 4}},
           [](V x) {
             return interpolate(x[0], {5, 7});
           }},
          {"interpolate bilinear",
           {{1, 2, 3, 4}},
           [](V x) { return interpolate(x[0], {}, {2.0}, "bilinear"); }},
          {"interpolate bilinear align_corners",
           {{2, 1, 4, 3}},
           [](V x) {
             return interpolate(x[0], {3, 7}, {}, "bilinear", true);
           }},
          {"interpolate linear",
           {{2, 2, 5}},
           [](V x) { return interpolate(x[0], {8}, {}, "linear"); }},
      },
      seed);
}

TEST_CASE("gradcheck conv_transpose2d, conv1d and conv2d with padding='same'") {
  const uint64_t seed = std::random_device{}();
  run_specs(
      {
          {"conv_transpose2d stride 2 output_padding 1",
           {{2, 3, 3, 2}, {3, 2, 3, 3}, {2}},
           [](V x) {
             return conv_transpose2d(
                 x[0], x[1], x[2], ConvTranspose2dOptions().stride(2).padding(1).output_padding(1));
           }},
          {"conv_transpose2d groups, dilation",
           {{1, 4, 3, 3}, {4, 1, 2, 3}},
           [](V x) {
             return conv_transpose2d(x[0], x[1], Tensor(),
                                     ConvTranspose2dOptions().groups(2).dilation(2, 1));
           }},
          {"conv1d stride 2 padding 1",
           {{2, 3, 7}, {4, 3, 3}, {4}},
           [](V x) { return conv1d(x[0], x[1], x[2], Conv1dOptions().stride(2).padding(1)); }},
          {"conv1d same, even kernel",
           {{1, 2, 6}, {3, 2, 4}},
           [](V x) { return conv1d(x[0], x[1], Tensor(), Conv1dOptions().padding("same")); }},
          {"conv2d same, rectangular kernel",
           {{1, 2, 5, 4}, {3, 2, 2, 3}, {3}},
           [](V x) { return conv2d(x[0], x[1], x[2], Conv2dOptions().padding("same")); }},
      },
      seed);
}

TEST_CASE("gradcheck the new activations, prelu and pixel (un)shuffle") {
  const uint64_t seed = std::random_device{}();
  Spec hs{"hardswish", {{4, 5}}, [](V x) { return hardswish(x[0]); }, -5, 5};
  Spec hsig{"hardsigmoid", {{4, 5}}, [](V x) { return hardsigmoid(x[0]); }, -5, 5};
  Spec pr{"prelu per channel", {{2, 3, 4}, {3}}, [](V x) { return prelu(x[0], x[1]); }};
  pr.away_from_zero = true;
  Spec pr1{"prelu one weight", {{5}, {1}}, [](V x) { return prelu(x[0], x[1]); }};
  pr1.away_from_zero = true;
  run_specs(
      {
          hs,
          hsig,
          {"mish", {{3, 5}}, [](V x) { return mish(x[0]); }, -4, 4},
          pr,
          pr1,
          {"pixel_shuffle", {{2, 8, 2, 3}}, [](V x) { return pixel_shuffle(x[0], 2); }},
          {"pixel_unshuffle", {{1, 2, 4, 6}}, [](V x) { return pixel_unshuffle(x[0], 2); }},
      },
      seed);
}

TEST_CASE("gradcheck scaled_dot_product_attention and multi_head_attention_forward") {
  const uint64_t seed = std::random_device{}();
  run_specs(
      {
          {"sdpa",
           {{2, 3, 4}, {2, 5, 4}, {2, 5, 3}},
           [](V x) { return scaled_dot_product_attention(x[0], x[1], x[2]); }},
          {"sdpa causal, scale",
           {{1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 2}},
           [](V x) {
             return scaled_dot_product_attention(x[0], x[1], x[2], Tensor(), 0, true, 0.7);
           }},
          {"sdpa float mask",
           {{3, 4}, {5, 4}, {5, 2}, {3, 5}},
           [](V x) { return scaled_dot_product_attention(x[0], x[1], x[2], x[3]); }},
          {"multi-head attention",
           {{3, 2, 4}, {5, 2, 4}, {5, 2, 4}, {12, 4}, {12}, {4, 4}, {4}},
           [](V x) {
             MultiheadAttentionWeights w;
             w.in_proj_weight = x[3], w.in_proj_bias = x[4];
             w.out_proj_weight = x[5], w.out_proj_bias = x[6];
             MultiheadAttentionArgs a;
             a.num_heads = 2;
             a.key_padding_mask =
                 on(from_vector<int64_t>({0, 0, 0, 1, 0, 0, 1, 0, 0, 0}, {2, 5}), x[0]).to(kBool);
             return multi_head_attention_forward(x[0], x[1], x[2], w, a).first;
           }},
      },
      seed);
}

TEST_CASE("gradcheck the losses in every reduction") {
  const uint64_t seed = std::random_device{}();
  std::vector<Spec> specs;
  for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    specs.push_back({"cross_entropy with weights and smoothing", {{4, 3}}, [=](V x) {
                       const Tensor t = on(from_vector<int64_t>({2, 0, -100, 1}), x[0]);
                       const Tensor w = on(from_vector<double>({0.5, 2.0, 1.5}), x[0]);
                       return cross_entropy(x[0], t, -100, r, 0.2, w);
                     }});
    specs.push_back({"cross_entropy with probability targets", {{4, 3}, {4, 3}}, [=](V x) {
                       return cross_entropy(x[0], x[1], -100, r, 0.1);
                     }});
    specs.push_back({"nll_loss with weights", {{4, 3}}, [=](V x) {
                       const Tensor t = on(from_vector<int64_t>({2, 0, 1, 1}), x[0]);
                       const Tensor w = on(from_vector<double>({0.5, 2.0, 1.5}), x[0]);
                       return nll_loss(x[0], t, -100, r, w);
                     }});
    Spec l1{"l1_loss", {{3, 4}, {3, 4}}, [=](V x) { return l1_loss(x[0], x[1], r); }};
    specs.push_back(l1);
    specs.push_back({"smooth_l1_loss beta 0.5", {{3, 4}, {3, 4}}, [=](V x) {
                       return smooth_l1_loss(x[0], x[1], r, 0.5);
                     }});
    specs.push_back({"huber_loss delta 0.7", {{3, 4}, {3, 4}}, [=](V x) {
                       return huber_loss(x[0], x[1], r, 0.7);
                     }});
    specs.push_back({"margin_ranking_loss", {{6}, {6}}, [=](V x) {
                       const Tensor y = on(from_vector<double>({1, -1, 1, 1, -1, -1}), x[0]);
                       return margin_ranking_loss(x[0], x[1], y, 0.1, r);
                     }});
    specs.push_back({"cosine_embedding_loss", {{4, 3}, {4, 3}}, [=](V x) {
                       const Tensor y = on(from_vector<double>({1, -1, 1, -1}), x[0]);
                       return cosine_embedding_loss(x[0], x[1], y, -0.9, r);
                     }});
  }
  for (const char* red : {"none", "mean", "batchmean", "sum"}) {
    specs.push_back(
        {"kl_div", {{3, 4}, {3, 4}}, [=](V x) { return kl_div(x[0], x[1], red); }, 0.1, 1.0});
    specs.push_back({"kl_div log_target", {{3, 4}, {3, 4}}, [=](V x) {
                       return kl_div(x[0], x[1], red, true);
                     }});
  }
  run_specs(specs, seed);
}

TEST_CASE("dropout2d zeroes whole channels with the generator's mask, and its gradient") {
  Generator gen(11);
  Tensor x = rand({3, 4, 2, 5}, kFloat64);
  requires_grad_(x);
  gen.set_state(11, 0);
  const Tensor y = feature_dropout(x, 0.5, true, &gen);
  backward(sum(y));
  const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  const std::vector<double> gv = grad(x).to_vector<double>();
  int dropped = 0;
  for (int64_t ch = 0; ch < 12; ++ch) {  // each channel: all zero, or all x / (1 - p)
    const bool zero = yv[ch * 10] == 0.0;
    dropped += zero;
    for (int64_t i = ch * 10; i < ch * 10 + 10; ++i) {
      CHECK(yv[i] == doctest::Approx(zero ? 0.0 : 2 * xv[i]));
      CHECK(gv[i] == (zero ? 0.0 : 2.0));
    }
  }
  CHECK(dropped > 0);
  CHECK(dropped < 12);
  // The mask is dropout's on a [N, C, 1, 1] tensor of ones, from the same generator state.
  gen.set_state(11, 0);
  const std::vector<double> mask =
      dropout(ones({3, 4, 1, 1}, kFloat64), 0.5, true, &gen).to_vector<double>();
  for (int64_t ch = 0; ch < 12; ++ch) CHECK((yv[ch * 10] == 0.0) == (mask[ch] == 0.0));
  CHECK(feature_dropout(x, 0.5, false, &gen).impl() == x.impl());
}

TEST_CASE("a leaf keeps its first gradient only when nothing else refers to it") {
  // Note [A leaf's first gradient]: the same gradient sent to two leaves is copied for the
  // first, so writing one .grad leaves the other alone.
  Tensor a = rand({3, 4}, kFloat64), b = rand({3, 4}, kFloat64);
  requires_grad_(a);
  requires_grad_(b);
  backward(sum(add(a, b)));
  CHECK(grad(a).storage() != grad(b).storage());
  grad(a).fill_(5.0);
  CHECK(grad(b).to_vector<double>() == std::vector<double>(12, 1.0));
  // A gradient the caller passes is never taken over.
  Tensor x = rand({5}, kFloat64);
  requires_grad_(x);
  const Tensor g = from_vector<double>({1, 2, 3, 4, 5});
  backward(x, g);
  CHECK(grad(x).storage() != g.storage());
  // A fresh gradient (a layer's input gradient) is kept without a copy, and stays correct.
  Tensor w = rand({4, 4}, kFloat64);
  requires_grad_(w);
  backward(sum(mul(w, 3.0)));
  CHECK(grad(w).to_vector<double>() == std::vector<double>(16, 3.0));
}

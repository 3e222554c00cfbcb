// cuDNN's graph-API engines on a real GPU (ops/cudnn/graph.h, the `cudnn` family of
// ops/conv2d_cudnn.cpp): every engine config cuDNN ranks for a dozen shapes, forced in turn in all
// three directions, against a float64 reference on the cpu; deterministic configs bit-identical
// across two runs; the heuristic policy picking cuDNN first; the device's description captured
// (EMBER_CUDNN_CAPTURE=FILE writes its JSON: tests/gpu/check.sh keeps it) and ranking the same
// configs without the handle as with it. Runs in the `gpu` executable, only where a GPU is usable.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "ember/build_config.h"

#if EMBER_HAVE_CUDNN

#include "ops/activation.h"
#include "ops/conv2d.h"
#include "ops/conv2d_cudnn.h"
#include "ops/cudnn/descriptors.h"
#include "ops/cudnn/graph.h"
#include "ops/elementwise.h"
#include "ops/softmax.h"
#include "runtime/gpu.h"
#include "runtime/rng.h"

using namespace ember;

namespace {

const Device kCuda0(DeviceType::CUDA, 0);

struct Case {
  Shape x, w;
  int64_t stride, pad, dil, groups;
};
const Case kCases[] = {
    {{2, 3, 17, 19}, {8, 3, 3, 3}, 1, 1, 1, 1},     {{4, 16, 14, 14}, {32, 16, 3, 3}, 2, 1, 1, 1},
    {{1, 32, 9, 9}, {16, 32, 1, 1}, 1, 0, 1, 1},    {{2, 8, 23, 21}, {8, 8, 5, 5}, 1, 2, 1, 1},
    {{3, 12, 15, 15}, {12, 4, 3, 3}, 1, 1, 1, 3},   {{2, 16, 12, 12}, {16, 1, 3, 3}, 1, 1, 1, 16},
    {{2, 6, 20, 20}, {10, 6, 3, 3}, 1, 2, 2, 1},    {{1, 3, 32, 32}, {16, 3, 7, 7}, 2, 3, 1, 1},
    {{8, 64, 8, 8}, {64, 64, 3, 3}, 1, 1, 1, 1},    {{2, 5, 11, 13}, {7, 5, 2, 4}, 1, 0, 1, 1},
    {{1, 128, 7, 7}, {256, 128, 1, 1}, 2, 0, 1, 1}, {{2, 4, 40, 40}, {4, 4, 9, 9}, 1, 4, 1, 1},
};

ops::Conv2dParams params_of(const Case& c) {
  ops::Conv2dParams p;
  p.stride = {c.stride, c.stride};
  p.padding = {c.pad, c.pad};
  p.dilation = {c.dil, c.dil};
  p.groups = c.groups;
  return p;
}

// max |got - want| / max |want|.
double rel_error(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = got.to(kFloat64).to(kCPU).to_vector<double>();
  const std::vector<double> w = want.to_vector<double>();
  double d = 0, m = 0;
  for (size_t i = 0; i < w.size(); ++i)
    d = std::max(d, std::abs(g[i] - w[i])), m = std::max(m, std::abs(w[i]));
  return d / (m > 0 ? m : 1);
}

Tensor run(ops::ConvDirection dir, const Tensor& x, const Tensor& w, const Tensor& dy,
           const ops::Conv2dParams& p) {
  switch (dir) {
    case ops::ConvDirection::forward:
      return ops::conv2d(x, w, Tensor(), p);
    case ops::ConvDirection::backward_data:
      return ops::conv2d_backward_data(dy, w, x.shape(), p);
    default:
      return ops::conv2d_backward_filter(dy, x, w.shape(), p);
  }
}

}  // namespace

TEST_CASE("cudnn engines on cuda:0: every ranked config and classic algorithm against float64") {
  int configs = 0;
  for (const Case& c : kCases) {
    const ops::Conv2dParams p = params_of(c);
    manual_seed(7);
    const Tensor x64 = randn(c.x, kFloat64), w64 = randn(c.w, kFloat64);
    const Shape ys = ops::conv2d_output_shape(c.x, c.w, p);
    const Tensor dy64 = randn(ys, kFloat64);
    const Tensor x = x64.to(kFloat32).to(kCuda0), w = w64.to(kFloat32).to(kCuda0),
                 dy = dy64.to(kFloat32).to(kCuda0);
    for (auto dir : {ops::ConvDirection::forward, ops::ConvDirection::backward_data,
                     ops::ConvDirection::backward_filter}) {
      ops::set_conv_algo("");
      // The reference: float64 on the cpu, from the same (float32-rounded) values.
      const Tensor want =
          run(dir, x.to(kCPU).to(kFloat64), w.to(kCPU).to(kFloat64), dy.to(kCPU).to(kFloat64), p);
      const ops::ConvKey key = ops::conv2d_key(dir, c.x, c.w, kFloat32, kCuda0, p);
      CAPTURE(ops::conv_key_string(key));
      const ops::ConvSelection sel = ops::explain_conv_algos(key);
      CHECK(sel.candidates.front().backend == ops::ConvBackend::cpu);  // registration order
      bool any = false;
      for (const ops::ConvCandidate& cand : sel.candidates) {
        const bool library = cand.backend == ops::ConvBackend::cudnn ||
                             cand.backend == ops::ConvBackend::cudnn_legacy;
        if (!library || !cand.supported) continue;
        any = true;
        CAPTURE(cand.name);
        ops::set_conv_algo(cand.name);
        const Tensor got = run(dir, x, w, dy, p);
        CHECK(rel_error(got, want) <= 1e-5);
        if (dir == ops::ConvDirection::forward) {  // the bias, added after the convolution
          const Tensor b = randn({c.w[0]}).to(kCuda0);
          ops::set_conv_algo("");
          const Tensor want_b = ops::conv2d(x.to(kCPU).to(kFloat64), w.to(kCPU).to(kFloat64),
                                            b.to(kCPU).to(kFloat64), p);
          ops::set_conv_algo(cand.name);
          CHECK(rel_error(ops::conv2d(x, w, b, p), want_b) <= 1e-5);
        }
        if (cand.deterministic) {
          const Tensor again = run(dir, x, w, dy, p);
          CHECK(again.to(kCPU).to_vector<float>() == got.to(kCPU).to_vector<float>());
        }
        ++configs;
      }
      ops::set_conv_algo("");
      CHECK(any);
      // The heuristic policy tries cuDNN's list first, but for float32 3x3 stride-1 layers of
      // 64 channels or more in and out, forward and backward-data, where Ember's Winograd goes
      // before it (Note [Winograd before cuDNN] in ops/conv2d_registry.cpp).
      const kernels::ConvShape& s = key.shape;
      const bool winograd_first = dir != ops::ConvDirection::backward_filter && s.r == 3 &&
                                  s.s == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dil_h == 1 &&
                                  s.dil_w == 1 && s.groups == 1 && s.c >= 64 && s.k >= 64;
      if (winograd_first)
        CHECK(sel.chosen == (s.oh * s.ow >= 14 * 14 ? "winograd_f4x4_3x3" : "winograd_f2x2_3x3"));
      else
        CHECK(sel.chosen.rfind("cudnn:eng", 0) == 0);
    }
  }
  MESSAGE("cuDNN configs checked against float64: " << configs);

  // The math types FindEx returns when the descriptor asks for FMA (recorded for the docs).
  const Case& c = kCases[8];
  const ops::Conv2dParams p = params_of(c);
  const Shape ys = ops::conv2d_output_shape(c.x, c.w, p);
  const Tensor x = randn(c.x).to(kCuda0), w = randn(c.w).to(kCuda0);
  Tensor y = empty(ys, {kFloat32, kCuda0}), ws = empty({64 << 20}, {kUInt8, kCuda0});
  const cudnnHandle_t h = ops::cudnn::handle(0, gpu::current_stream(kCuda0));
  const kernels::ConvShape s =
      ops::conv2d_key(ops::ConvDirection::forward, c.x, c.w, kFloat32, kCuda0, p).shape;
  std::string found;
  for (const auto& r :
       ops::cudnn::legacy_find(h, ops::ConvDirection::forward, s, kFloat32, false, x.data_ptr(),
                               w.data_ptr(), y.data_ptr(), ws.data_ptr(), size_t{64} << 20))
    if (r.status == CUDNN_STATUS_SUCCESS)
      found += " " + ops::cudnn::legacy_algo_name(ops::ConvDirection::forward, r.algo) + "=" +
               ops::cudnn::math_type_name(r.math);
  MESSAGE("FindEx under FMA, 8x64x8x8 3x3:" << found);
  CHECK_FALSE(found.empty());
}

TEST_CASE("cudnn engines on cuda:0: the captured description ranks as the handle does") {
  const cudnnHandle_t h = ops::cudnn::handle(0, gpu::current_stream(kCuda0));
  const auto live = ops::cudnn::DeviceDescription::of_handle(h);
  const std::string json = live->json();
  if (const char* path = std::getenv("EMBER_CUDNN_CAPTURE")) {
    std::ofstream(path) << json << "\n";
    MESSAGE("cuDNN device description of " << live->name() << " written to " << path);
  }
  const auto saved = ops::cudnn::DeviceDescription::from_json(json, "captured");
  CHECK(saved->name() == live->name());
  ops::Conv2dParams p;
  p.padding = {1, 1};
  for (auto dir : {ops::ConvDirection::forward, ops::ConvDirection::backward_data,
                   ops::ConvDirection::backward_filter}) {
    const ops::ConvKey key =
        ops::conv2d_key(dir, {32, 64, 56, 56}, {64, 64, 3, 3}, kFloat32, kCuda0, p);
    const auto a = ops::cudnn::conv_engines(key, *live), b = ops::cudnn::conv_engines(key, *saved);
    // The description lacks what only a live device tells: on an H200 (cuDNN 9.19) the handle
    // ranked 36 configs for this key and the description 35. Every config the description ranks,
    // the handle ranks too, in the same order and with the same workspace.
    size_t j = 0;
    std::string missing;
    for (const auto& c : b.configs) {
      const size_t start = j;
      while (j < a.configs.size() && a.configs[j].config.name() != c.config.name()) ++j;
      CAPTURE(c.config.name());
      REQUIRE(j < a.configs.size());
      for (size_t m = start; m < j; ++m) missing += " " + a.configs[m].config.name();
      CHECK(a.configs[j].workspace == c.workspace);
      ++j;
    }
    for (; j < a.configs.size(); ++j) missing += " " + a.configs[j].config.name();
    MESSAGE(kernels::conv_direction_name(dir), ": the handle ranks ", a.configs.size(),
            " configs, the description ", b.configs.size(),
            missing.empty() ? std::string() : "; only the handle:" + missing);
    CHECK(b.configs.size() * 10 >= a.configs.size() * 9);
  }
}

TEST_CASE("cudnn on cuda:0: the fused conv + bias + relu graph against float64") {
  for (int i : {0, 1, 3, 8, 10}) {
    const Case& c = kCases[i];
    const ops::Conv2dParams p = params_of(c);
    manual_seed(17);
    const Tensor x = randn(c.x).to(kCuda0), w = randn(c.w).to(kCuda0),
                 b = randn({c.w[0]}).to(kCuda0);
    CAPTURE(i);
    const Tensor want = ops::relu(
        ops::conv2d(x.to(kCPU).to(kFloat64), w.to(kCPU).to(kFloat64), b.to(kCPU).to(kFloat64), p));
    CHECK(rel_error(ops::conv2d_bias_relu(x, w, b, p), want) <= 1e-5);
    ops::set_conv_backend_preference(ops::BackendPreference::prefer_ember);  // apart, on Ember's
    CHECK(rel_error(ops::conv2d_bias_relu(x, w, b, p), want) <= 1e-5);
    ops::set_conv_backend_preference(ops::BackendPreference::prefer_cudnn);
  }
}

TEST_CASE("cudnn on cuda:0: a half conv2d with a bias; a forced engine refuses the bias") {
  // Note [Half bias in one rounding]: unforced, cuDNN's fused conv + bias graph (within the half
  // dtype's rounding of the float64 result; tests/spec/conv2d_half.cpp checks each element to
  // 1 ulp); forced, a cuDNN engine refuses a bias with the reason, and runs without one.
  for (DType t : {kFloat16, kBFloat16})
    for (int i : {0, 2, 8}) {
      const Case& c = kCases[i];
      const ops::Conv2dParams p = params_of(c);
      manual_seed(23);
      const Tensor x = randn(c.x).to(t).to(kCuda0), w = randn(c.w).to(t).to(kCuda0),
                   b = randn({c.w[0]}).to(t).to(kCuda0);
      CAPTURE(t);
      CAPTURE(i);
      const Tensor x64 = x.to(kCPU).to(kFloat64), w64 = w.to(kCPU).to(kFloat64);
      const Tensor want = ops::conv2d(x64, w64, b.to(kCPU).to(kFloat64), p);
      const Tensor want_nobias = ops::conv2d(x64, w64, Tensor(), p);
      const double u = t == kFloat16 ? 0x1p-11 : 0x1p-8;
      CHECK(rel_error(ops::conv2d(x, w, b, p), want) <= u);
      const ops::ConvKey key = ops::conv2d_key(ops::ConvDirection::forward, c.x, c.w, t, kCuda0, p);
      int forced = 0;
      for (const ops::ConvCandidate& cand : ops::explain_conv_algos(key).candidates) {
        if (cand.backend != ops::ConvBackend::cudnn || !cand.supported || forced == 2) continue;
        CAPTURE(cand.name);
        ops::set_conv_algo(cand.name);
        CHECK_THROWS_WITH_AS(ops::conv2d(x, w, b, p),
                             doctest::Contains("adds its bias before its one rounding"),
                             ops::ConvNotSupported);
        CHECK(rel_error(ops::conv2d(x, w, Tensor(), p), want_nobias) <= 4 * u);
        ops::set_conv_algo("");
        ++forced;
      }
      CHECK(forced > 0);
    }
}

TEST_CASE("cudnn on cuda:0: activations and softmax, forward and backward, against float64") {
  manual_seed(3);
  const Tensor x64 = ops::mul(randn({3, 5, 7, 11}, kFloat64), 3.0),
               g64 = randn({3, 5, 7, 11}, kFloat64);
  const Tensor x = x64.to(kFloat32).to(kCuda0), g = g64.to(kFloat32).to(kCuda0);
  const Tensor xr = x.to(kCPU).to(kFloat64), gr = g.to(kCPU).to(kFloat64);
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;  // (x, grad) -> y or dx
  struct Case {
    const char* name;
    Fn forward, backward;
  };
  const Case cases[] = {
      {"relu", [](const Tensor& a, const Tensor&) { return ops::relu(a); },
       [](const Tensor& a, const Tensor& gr_) { return ops::relu_backward(gr_, a); }},
      {"sigmoid", [](const Tensor& a, const Tensor&) { return ops::sigmoid(a); },
       [](const Tensor& a, const Tensor& gr_) {
         return ops::sigmoid_backward(gr_, ops::sigmoid(a));
       }},
      {"tanh", [](const Tensor& a, const Tensor&) { return ops::tanh(a); },
       [](const Tensor& a, const Tensor& gr_) { return ops::tanh_backward(gr_, ops::tanh(a)); }},
      {"elu", [](const Tensor& a, const Tensor&) { return ops::elu(a, 0.7); },
       [](const Tensor& a, const Tensor& gr_) { return ops::elu_backward(gr_, a, 0.7); }},
      {"silu", [](const Tensor& a, const Tensor&) { return ops::silu(a); },
       [](const Tensor& a, const Tensor& gr_) { return ops::silu_backward(gr_, a); }},
      {"relu6 (clipped relu)",
       [](const Tensor& a, const Tensor&) { return ops::hardtanh(a, 0, 6); },
       [](const Tensor& a, const Tensor& gr_) { return ops::hardtanh_backward(gr_, a, 0, 6); }},
      {"softmax dim 1", [](const Tensor& a, const Tensor&) { return ops::softmax(a, 1); },
       [](const Tensor& a, const Tensor& gr_) {
         return ops::softmax_backward(gr_, ops::softmax(a, 1), 1);
       }},
      {"log_softmax dim 3", [](const Tensor& a, const Tensor&) { return ops::log_softmax(a, 3); },
       [](const Tensor& a, const Tensor& gr_) {
         return ops::log_softmax_backward(gr_, ops::log_softmax(a, 3), 3);
       }},
  };
  for (auto pref : {ops::BackendPreference::prefer_cudnn, ops::BackendPreference::prefer_ember}) {
    ops::set_backend_preference(ops::CudnnOp::activation, pref);
    ops::set_backend_preference(ops::CudnnOp::softmax, pref);
    for (const Case& c : cases) {
      CAPTURE(c.name);
      CAPTURE(ops::backend_preference_name(pref));
      CHECK(rel_error(c.forward(x, g), c.forward(xr, gr)) <= 1e-5);
      CHECK(rel_error(c.backward(x, g), c.backward(xr, gr)) <= 1e-5);
    }
  }
  ops::set_backend_preference(ops::CudnnOp::activation, ops::BackendPreference::prefer_cudnn);
  ops::set_backend_preference(ops::CudnnOp::softmax, ops::BackendPreference::prefer_cudnn);
}

#endif  // EMBER_HAVE_CUDNN

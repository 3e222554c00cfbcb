// cuDNN's graph API without a GPU (ops/cudnn/graph.h, ops/conv2d_cudnn.h): the shipped device
// descriptions and bad ones, the heuristic policy's filtering on random keys in all three
// directions, the config names, and the `cudnn` family in the registry where there is no GPU
// (every cuDNN candidate answers "not supported" with the reason; Ember's kernels run).
// Built only with cuDNN. EMBER_TEST_SOURCE_DIR is set for this file by tests/CMakeLists.txt.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <set>
#include <string>

#include "ember/build_config.h"

#if EMBER_HAVE_CUDNN

#include "ops/conv2d.h"
#include "ops/conv2d_cudnn.h"
#include "ops/cudnn/graph.h"
#include "ops/op_test_util.h"
#include "runtime/gpu.h"

namespace ember::test {
namespace {

const std::string kSource = EMBER_TEST_SOURCE_DIR;
const std::string kH200 = kSource + "/data/cudnn/h200.json";
const std::string kA100 = kSource + "/data/cudnn/a100.json";

std::string read(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

ops::ConvKey key_of(ops::ConvDirection dir, Shape x, Shape w, int64_t stride, int64_t pad,
                    int64_t dil, int64_t groups, DType dt = kFloat32) {
  ops::Conv2dParams p;
  p.stride = {stride, stride};
  p.padding = {pad, pad};
  p.dilation = {dil, dil};
  p.groups = groups;
  return ops::conv2d_key(dir, x, w, dt, Device(DeviceType::CUDA, 0), p);
}

}  // namespace

TEST_CASE("cudnn graph: the shipped H200 and A100 descriptions load and say what they are") {
  const auto h200 = ops::cudnn::DeviceDescription::from_file(kH200);
  CHECK(h200->name() == "NVIDIA H200");
  CHECK(h200->compute_capability() == 90);
  CHECK(h200->source().find("captured from an NVIDIA H200") != std::string::npos);
  const auto a100 = ops::cudnn::DeviceDescription::from_file(kA100);
  CHECK(a100->name() == "NVIDIA A100-SXM4-40GB");
  CHECK(a100->compute_capability() == 80);
  CHECK(a100->source().find("not captured on the GPU") != std::string::npos);
  // cuDNN's own JSON of the description carries the numbers of the file.
  CHECK(h200->json().find("232448") != std::string::npos);
}

TEST_CASE("cudnn graph: a bad description is a typed error naming the file and what is wrong") {
  CHECK_THROWS_AS(ops::cudnn::DeviceDescription::from_file(kSource + "/no/such.json"), IOError);
  std::string m =
      message_of([] { ops::cudnn::DeviceDescription::from_json("{not json", "x.json"); });
  CHECK(m.find("x.json: expected a JSON object") != std::string::npos);
  CHECK_THROWS_AS(ops::cudnn::DeviceDescription::from_json("[1, 2]", "x.json"), FormatError);
  // Two keys taken out: both are named.
  std::string text = read(kH200);
  for (const char* k : {"\"multiProcessorCount\"", "\"l2CacheSize\""}) {
    const size_t at = text.find(k);
    REQUIRE(at != std::string::npos);
    text.replace(at, std::strlen(k), "\"unused\"");
  }
  m = message_of([&] { ops::cudnn::DeviceDescription::from_json(text, "cut.json"); });
  CAPTURE(m);
  CHECK(m.find("cut.json: missing key(s) multiProcessorCount, l2CacheSize") != std::string::npos);
  text = read(kH200);
  text.replace(text.find("\"deviceVer\": 900"), 16, "\"deviceVer\": \"9.0\"");
  CHECK_THROWS_AS(ops::cudnn::DeviceDescription::from_json(text, "v.json"), FormatError);
}

TEST_CASE("cudnn graph: the heuristic policy's configs on random keys in every direction") {
  const auto h200 = ops::cudnn::DeviceDescription::from_file(kH200);
  const std::regex name_form(R"(cudnn:eng\d+(\{\d+=-?\d+(,\d+=-?\d+)*\})?)");
  const ops::ConvAlgoPtr family = ops::find_conv_algo("cudnn");
  REQUIRE(family != nullptr);
  std::mt19937 g(fresh_seed());
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); };
  int keys = 0;
  for (int i = 0; i < 12; ++i) {
    const int groups = pick(0, 3) == 0 ? 2 : 1;
    const int64_t c = groups * pick(1, 24), k = groups * pick(1, 24), r = pick(1, 5);
    const int64_t h = pick(r, 40), w = pick(r, 40), stride = pick(1, 2), dil = pick(1, 2);
    const int64_t pad = pick(0, 2);
    if ((r - 1) * dil + 1 > h + 2 * pad || (r - 1) * dil + 1 > w + 2 * pad) continue;
    const DType dt = pick(0, 3) == 0 ? kFloat64 : kFloat32;
    for (auto dir : {ops::ConvDirection::forward, ops::ConvDirection::backward_data,
                     ops::ConvDirection::backward_filter})
      for (int variant = 0; variant < 3; ++variant) {
        ops::ConvKey key =
            key_of(dir, {pick(1, 8), c, h, w}, {k, c / groups, r, r}, stride, pad, dil, groups, dt);
        key.math = variant == 1 ? ops::ConvMathMode::tf32 : ops::ConvMathMode::fp32;
        key.deterministic = variant == 2 ? 1 : 0;
        CAPTURE(ops::conv_key_string(key));
        CAPTURE(variant);
        const ops::cudnn::ConvEngines e = ops::cudnn::conv_engines(key, *h200);
        CHECK(e.global_count > 0);
        CHECK(e.tried() > 0);
        std::set<std::string> names;
        for (const ops::cudnn::RankedConfig& rc : e.configs) {
          const std::string n = rc.config.name();
          CHECK(std::regex_match(n, name_form));
          CHECK(names.insert(n).second);  // no config twice
          CHECK(family->owns(n));
          CHECK(rc.refusal == ops::cudnn::config_refusal(key, rc.config));
          if (!rc.refusal.empty()) continue;
          // What the policy lets through, and each tried config has a plan for the H200.
          CHECK_FALSE(rc.config.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS));
          if (dt == kFloat32 && key.math == ops::ConvMathMode::fp32)
            CHECK_FALSE(rc.config.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
          if (key.deterministic) CHECK_FALSE(rc.config.has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC));
          CHECK(rc.workspace >= 0);
          CHECK(rc.plan_error.empty());
        }
        ++keys;
      }
  }
  CHECK(keys > 0);
}

TEST_CASE("cudnn graph: fused conv + bias (+ relu) graphs rank and plan on the described H200") {
  const auto h200 = ops::cudnn::DeviceDescription::from_file(kH200);
  std::mt19937 g(fresh_seed());
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); };
  // Half keys too: conv2d runs a half convolution with a bias as this graph (Note [Half bias in
  // one rounding] in ops/conv2d_cudnn.cpp), odd channel counts included.
  const DType dtypes[] = {kFloat64, kFloat32, kFloat16, kBFloat16};
  for (int i = 0; i < 12; ++i) {
    const int64_t c = pick(1, 32), k = pick(1, 32), r = 2 * pick(0, 2) + 1;
    const int64_t h = pick(r, 30), w = pick(r, 30);
    const DType dt = dtypes[i % 4];
    const ops::ConvKey key = key_of(ops::ConvDirection::forward, {pick(1, 4), c, h, w},
                                    {k, c, r, r}, pick(1, 2), r / 2, 1, 1, dt);
    CAPTURE(ops::conv_key_string(key));
    for (auto f : {ops::cudnn::ConvFusion::bias, ops::cudnn::ConvFusion::bias_relu}) {
      const ops::cudnn::ConvEngines e = ops::cudnn::conv_engines(key, *h200, f);
      CHECK(e.tried() > 0);
      for (const ops::cudnn::RankedConfig& rc : e.configs)
        if (rc.refusal.empty()) CHECK(rc.workspace >= 0);
    }
  }
  const ops::ConvKey bwd =
      key_of(ops::ConvDirection::backward_data, {2, 4, 8, 8}, {4, 4, 3, 3}, 1, 1, 1, 1);
  CHECK_THROWS_AS(ops::cudnn::conv_engines(bwd, *h200, ops::cudnn::ConvFusion::bias_relu),
                  ops::ConvNotSupported);
}

TEST_CASE("cudnn graph: TF32 engines come in only when the key allows TF32") {
  ops::ConvKey key =
      key_of(ops::ConvDirection::forward, {32, 64, 56, 56}, {64, 64, 3, 3}, 1, 1, 1, 1);
  const ops::CudnnRanking strict = ops::cudnn_ranking(key, kH200);
  key.math = ops::ConvMathMode::tf32;
  const ops::CudnnRanking tf32 = ops::cudnn_ranking(key, kH200);
  auto tensor_core_tried = [](const ops::CudnnRanking& r) {
    int n = 0;
    for (const ops::CudnnEngineRow& row : r.rows)
      n += row.refusal.empty() && row.notes.find("tensor core") != std::string::npos;
    return n;
  };
  CHECK(tensor_core_tried(strict) == 0);
  CHECK(tensor_core_tried(tf32) > 0);
  CHECK(strict.device_name == "NVIDIA H200");
}

TEST_CASE("cudnn graph: float16 and bfloat16 keys rank tensor-op engines on the described H200") {
  const auto h200 = ops::cudnn::DeviceDescription::from_file(kH200);
  for (DType dt : {kFloat16, kBFloat16})
    for (auto dir : {ops::ConvDirection::forward, ops::ConvDirection::backward_data,
                     ops::ConvDirection::backward_filter}) {
      const ops::ConvKey key = key_of(dir, {32, 64, 28, 28}, {64, 64, 3, 3}, 1, 1, 1, 1, dt);
      CAPTURE(ops::conv_key_string(key));
      CHECK(key.math == ops::ConvMathMode::tensor_op);
      const ops::cudnn::ConvEngines e = ops::cudnn::conv_engines(key, *h200);
      CHECK(e.tried() > 0);
      int tensor_core = 0;
      for (const ops::cudnn::RankedConfig& rc : e.configs)
        if (rc.refusal.empty()) {
          tensor_core += rc.config.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
          CHECK(rc.plan_error.empty());
        }
      CHECK(tensor_core > 0);
    }
  // The fused forward (bias, relu) in half too.
  const ops::ConvKey fwd =
      key_of(ops::ConvDirection::forward, {8, 32, 16, 16}, {32, 32, 3, 3}, 1, 1, 1, 1, kFloat16);
  CHECK(ops::cudnn::conv_engines(fwd, *h200, ops::cudnn::ConvFusion::bias_relu).tried() > 0);
}

TEST_CASE("cudnn graph: keys cuDNN cannot describe are refused with the reason") {
  const ops::ConvKey big =
      key_of(ops::ConvDirection::forward, {2048, 64, 128, 128}, {8, 64, 3, 3}, 1, 1, 1, 1);
  const std::string m = message_of([&] { ops::cudnn_ranking(big, kH200); });
  CHECK(m.find("fewer than 2^31 elements") != std::string::npos);
}

TEST_CASE("cudnn family: config names are recognised by their form only") {
  const ops::ConvAlgoPtr family = ops::find_conv_algo("cudnn");
  REQUIRE(family != nullptr);
  CHECK(family->is_family());
  for (const char* good : {"cudnn:eng0", "cudnn:eng38{2=1,13=0}", "cudnn:eng41{12=-1}"})
    CHECK(family->owns(good));
  for (const char* bad :
       {"cudnn", "cudnn:", "cudnn:eng", "cudnn:engx", "cudnn:eng3{", "cudnn:eng3{}",
        "cudnn:eng3{2=}", "cudnn:eng3{2=1,}", "cudnn:eng3{2=1}x", "direct"})
    CHECK_FALSE(family->owns(bad));
  const ops::ConvAlgoPtr classic = ops::find_conv_algo("cudnn_v7");
  REQUIRE(classic != nullptr);
  for (const char* good : {"cudnn_v7:implicit_precomp_gemm", "cudnn_v7:winograd_nonfused",
                           "cudnn_v7:algo_1", "cudnn_v7:fft_tiling"})
    CHECK(classic->owns(good));
  for (const char* bad : {"cudnn_v7", "cudnn_v7:", "cudnn_v7:fastest", "cudnn:eng0"})
    CHECK_FALSE(classic->owns(bad));
  CHECK_NOTHROW(ops::set_conv_algo("cudnn_v7:winograd"));
  CHECK_NOTHROW(ops::set_conv_algo("cudnn:eng38{2=1,13=0}"));
  ops::set_conv_algo("");
  const std::string m = message_of([] { ops::set_conv_algo("cudnn:fast"); });
  CHECK(m.find("cudnn:eng<N>") != std::string::npos);
}

TEST_CASE("cudnn family: without a GPU every cuDNN candidate is 'not supported' with the reason") {
  if (gpu::backend(DeviceType::CUDA).availability().usable) return;  // tests/ops/*_gpu.cpp
  const ops::ConvKey cuda =
      key_of(ops::ConvDirection::forward, {2, 8, 9, 9}, {4, 8, 3, 3}, 1, 1, 1, 1);
  const ops::ConvSelection sel = ops::explain_conv_algos(cuda);
  bool seen = false;
  for (const ops::ConvCandidate& c : sel.candidates) {
    if (c.backend != ops::ConvBackend::cudnn && c.backend != ops::ConvBackend::cudnn_legacy)
      continue;
    seen = true;
    CHECK((c.name == "cudnn" || c.name == "cudnn_v7"));
    CHECK_FALSE(c.supported);
    CHECK(c.reason.rfind("not supported: cuDNN runs on cuda devices only: ", 0) == 0);
  }
  CHECK(seen);
  // Every candidate says why it is (not) chosen; none throws for want of a GPU.
  CHECK(sel.chosen.rfind("cudnn", 0) != 0);
  for (const ops::ConvCandidate& c : sel.candidates) CHECK_FALSE(c.reason.empty());
  // On the cpu and the emulator the family says so too.
  for (Device d : {kCPU, Device(DeviceType::EMU, 0)}) {
    ops::ConvKey k = cuda;
    k.device_type = d.type;
    k.device_index = 0;
    for (const ops::ConvCandidate& c : ops::explain_conv_algos(k).candidates)
      if (c.name == "cudnn" || c.name == "cudnn_v7")
        CHECK(c.reason == "not supported: cuDNN runs on cuda devices only");
  }
  // Forcing one of its configs names the reason.
  ops::set_conv_algo("cudnn:eng0");
  const ops::ConvSelection forced = ops::explain_conv_algos(cuda);
  ops::set_conv_algo("");
  CHECK(forced.chosen.empty());
  CHECK(forced.reason.find("forced algorithm 'cudnn:eng0' cannot run it") != std::string::npos);
  CHECK(forced.reason.find("cudnn: forced, but not supported: cuDNN runs on cuda devices only") !=
        std::string::npos);
}

TEST_CASE("cudnn family: off through the API or EMBER_CUDNN, with the reason; bad values") {
  const ops::ConvKey cuda =
      key_of(ops::ConvDirection::forward, {2, 8, 9, 9}, {4, 8, 3, 3}, 1, 1, 1, 1);
  auto family_reason = [&] {
    for (const ops::ConvCandidate& c : ops::explain_conv_algos(cuda).candidates)
      if (c.name == "cudnn") return c.reason;
    return std::string("no cudnn row");
  };
  ops::set_cudnn_enabled(false);
  CHECK_FALSE(ops::cudnn_enabled());
  CHECK(family_reason().find("not supported: cuDNN is off (set_cudnn_enabled(false)") == 0);
  ops::set_cudnn_enabled(true);
  CHECK(ops::cudnn_enabled());
  CHECK(ops::parse_backend_preference("prefer-ember") == ops::BackendPreference::prefer_ember);
  CHECK_THROWS_AS(ops::parse_backend_preference("fastest"), ValueError);
  ops::set_backend_preference(ops::CudnnOp::softmax, ops::BackendPreference::prefer_ember);
  CHECK(ops::backend_preference(ops::CudnnOp::softmax) == ops::BackendPreference::prefer_ember);
  CHECK(ops::backend_preference(ops::CudnnOp::activation) == ops::BackendPreference::prefer_cudnn);
  CHECK(ops::conv_backend_preference() == ops::BackendPreference::prefer_cudnn);
  ops::set_backend_preference(ops::CudnnOp::softmax, ops::BackendPreference::prefer_cudnn);
  CHECK(ops::parse_cudnn_op("activation") == ops::CudnnOp::activation);
  CHECK(message_of([] {
          ops::parse_cudnn_op("pool2d");
        }).find("conv2d, activation, softmax, pooling or batch_norm") != std::string::npos);
  // TF32 reaches float32 cuda keys only.
  ops::set_conv_allow_tf32(true);
  CHECK(key_of(ops::ConvDirection::forward, {1, 2, 5, 5}, {2, 2, 3, 3}, 1, 0, 1, 1).math ==
        ops::ConvMathMode::tf32);
  CHECK(
      key_of(ops::ConvDirection::forward, {1, 2, 5, 5}, {2, 2, 3, 3}, 1, 0, 1, 1, kFloat64).math ==
      ops::ConvMathMode::fp32);
  CHECK(ops::conv2d_key(ops::ConvDirection::forward, {1, 2, 5, 5}, {2, 2, 3, 3}, kFloat32, kCPU, {})
            .math == ops::ConvMathMode::fp32);
  ops::set_conv_allow_tf32(false);
}

TEST_CASE("cudnn family: EMBER_CUDNN when the API has not said") {
  const ops::ConvKey cuda =
      key_of(ops::ConvDirection::forward, {2, 8, 9, 9}, {4, 8, 3, 3}, 1, 1, 1, 1);
  ops::reset_cudnn_enabled();
  setenv("EMBER_CUDNN", "0", 1);
  CHECK_FALSE(ops::cudnn_enabled());
  bool off = false;
  for (const ops::ConvCandidate& c : ops::explain_conv_algos(cuda).candidates)
    off = off || (c.name == "cudnn" && c.reason.find("EMBER_CUDNN=0") != std::string::npos);
  CHECK(off);
  setenv("EMBER_CUDNN", "maybe", 1);
  const std::string m = message_of([] { ops::cudnn_enabled(); });
  CHECK(m.find("EMBER_CUDNN: invalid value 'maybe': expected 0 (cuDNN off) or 1 (on)") !=
        std::string::npos);
  CHECK_THROWS_AS(ops::explain_conv_algos(cuda), ValueError);
  setenv("EMBER_CUDNN", "1", 1);
  CHECK(ops::cudnn_enabled());
  unsetenv("EMBER_CUDNN");
  CHECK(ops::cudnn_enabled());
}

}  // namespace ember::test

#endif  // EMBER_HAVE_CUDNN

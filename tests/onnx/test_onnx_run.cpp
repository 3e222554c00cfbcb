// Running ONNX graphs: the passes (batch-norm folding, conv+relu fusion, constant folding,
// dead-node removal) keep the function, checked against a float64 loop written here; buffers
// are freed after their last use; profiling names each node's kernels; on cpu and emu.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "onnx/model.h"
#include "ops/conv2d_algo.h"
#include "onnx_builder.h"
#include "runtime/error.h"

using namespace ember;
namespace eo = ember::onnx;  // ::onnx is the protobuf classes
using onnx_test::ModelBuilder;
using onnx_test::random_values;

namespace {

// conv2d(x, w) + b for x [N, C, H, W], w [K, C, 3, 3], padding 1, in float64.
std::vector<double> conv3x3(const std::vector<float>& x, const std::vector<float>& w,
                            const std::vector<float>& b, int N, int C, int K, int H, int W) {
  std::vector<double> y(static_cast<size_t>(N) * K * H * W);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j) {
          double s = b[k];
          for (int c = 0; c < C; ++c)
            for (int r = 0; r < 3; ++r)
              for (int q = 0; q < 3; ++q) {
                const int ii = i + r - 1, jj = j + q - 1;
                if (ii < 0 || jj < 0 || ii >= H || jj >= W) continue;
                s += static_cast<double>(x[((n * C + c) * H + ii) * W + jj]) *
                     w[((k * C + c) * 3 + r) * 3 + q];
              }
          y[((n * K + k) * H + i) * W + j] = s;
        }
  return y;
}

// relu(batch_norm(conv2d(x, w, b))) for x [1, C, H, W], w [K, C, 3, 3], padding 1, in float64.
std::vector<double> reference(const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& b, const std::vector<float>& gamma,
                              const std::vector<float>& beta, const std::vector<float>& mean,
                              const std::vector<float>& var, int C, int K, int H, int W) {
  std::vector<double> y = conv3x3(x, w, b, 1, C, K, H, W);
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t k = i / (H * W);
    const double sd = std::sqrt(static_cast<double>(var[k]) + 1e-5);
    y[i] = std::max(0.0, (y[i] - mean[k]) / sd * gamma[k] + beta[k]);
  }
  return y;
}

// x [1, 3, 7, 6] -> Conv (3x3, padding 1, bias) -> BatchNormalization -> "n", with seeded random
// weights and statistics; the activation after it is each test's own.
struct ConvBnNet {
  static constexpr int C = 3, K = 4, H = 7, W = 6;
  std::vector<float> x, w, b, gamma, beta, mean, var;
  explicit ConvBnNet(uint32_t seed)
      : x(random_values(C * H * W, seed)), w(random_values(K * C * 9, seed + 1)),
        b(random_values(K, seed + 2)), gamma(random_values(K, seed + 3)),
        beta(random_values(K, seed + 4)), mean(random_values(K, seed + 5)),
        var(random_values(K, seed + 6)) {
    for (auto& v : var) v = 0.5f + v * v;
  }
  void add_to(ModelBuilder& m) const {
    m.input("x", {1, C, H, W});
    m.node("Conv", {"x", "w", "b"}, {"c"}, {onnx_test::attr_ints("pads", {1, 1, 1, 1})}, "conv");
    m.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"}, {}, "bn");
    m.init("w", {K, C, 3, 3}, w);
    m.init("b", {K}, b);
    m.init("gamma", {K}, gamma);
    m.init("beta", {K}, beta);
    m.init("mean", {K}, mean);
    m.init("var", {K}, var);
  }
  // relu("n") in float64.
  std::vector<double> relu_reference() const {
    return reference(x, w, b, gamma, beta, mean, var, C, K, H, W);
  }
  Tensor input() const { return from_vector(x, {1, C, H, W}); }
};

}  // namespace

TEST_CASE("onnx run: conv -> batch norm -> relu, folded and fused, equals the float64 loop") {
  const ConvBnNet net(1);
  ModelBuilder m;
  net.add_to(m);
  m.node("Relu", {"n"}, {"y"}, {}, "relu");
  m.output("y");
  const auto want = net.relu_reference();
  const std::string bytes = m.bytes();
  for (const char* dev : {"cpu", "emu"})
    for (bool optimize : {false, true}) {
      CAPTURE(dev);
      CAPTURE(optimize);
      eo::LoadOptions opts;
      opts.device = Device::parse(dev);
      opts.optimize = optimize;
      const auto model = eo::load_from_memory(bytes.data(), bytes.size(), opts);
      CHECK(model.num_nodes() == (optimize ? 1 : 3));
      CHECK(model.passes().folded_batch_norms == (optimize ? 1 : 0));
      CHECK(model.passes().fused_relus == (optimize ? 1 : 0));
      const auto got = model.run({net.input()})[0].to_vector<float>();
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
    }
}

TEST_CASE("onnx run: conv -> batch norm -> clip (ReLU6), folded and fused, equals the float64 loop") {
  // Clip(0, 6) for the Relu: clip(v, 0, 6) = min(relu(v), 6). Bounds as initializers (opset 11
  // on) are fused; a bound that is a graph input is not.
  const ConvBnNet net(11);
  std::vector<double> want = net.relu_reference();
  for (double& v : want) v = std::min(v, 6.0);
  for (bool input_bound : {false, true}) {
    ModelBuilder m;
    net.add_to(m);
    if (input_bound) m.input("hi", {});
    m.node("Clip", {"n", "lo", "hi"}, {"y"}, {}, "relu6");
    m.output("y");
    m.init("lo", {}, {0.0f});
    if (!input_bound) m.init("hi", {}, {6.0f});
    const std::string bytes = m.bytes();
    for (const char* dev : {"cpu", "emu"}) {
      CAPTURE(dev);
      CAPTURE(input_bound);
      eo::LoadOptions opts;
      opts.device = Device::parse(dev);
      const auto model = eo::load_from_memory(bytes.data(), bytes.size(), opts);
      CHECK(model.num_nodes() == (input_bound ? 2 : 1));
      CHECK(model.passes().fused_clips == (input_bound ? 0 : 1));
      std::vector<Tensor> in{net.input()};
      if (input_bound) in.push_back(full({}, 6.0));
      const auto got = model.run(in)[0].to_vector<float>();
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
    }
  }
}

TEST_CASE("onnx run: a residual sum conv + z and its activation fold into the conv") {
  // x [2, 4, 5, 6] -> Conv (3x3, padding 1) -> Add(., z) -> Relu / Clip / nothing, where z is
  // x itself (ResNet's identity shortcut), a value computed after the conv in the file's order
  // (the fused conv moves to the Add's place), or a [4, 1, 1] graph input (broadcast: the conv
  // adds it after the convolution).
  constexpr int N = 2, C = 4, H = 5, W = 6;
  const uint32_t seed = std::random_device{}();
  CAPTURE(seed);
  const std::vector<float> xv = random_values(N * C * H * W, seed);
  const std::vector<float> wv = random_values(C * C * 9, seed + 1), bv = random_values(C, seed + 2);
  const std::vector<float> zb = random_values(C, seed + 3);
  const std::vector<double> conv = conv3x3(xv, wv, bv, N, C, C, H, W);
  enum class Z { shortcut, later, broadcast };
  for (Z z : {Z::shortcut, Z::later, Z::broadcast})
    for (const char* act : {"Relu", "Clip", ""}) {
      const int zi = static_cast<int>(z);
      CAPTURE(zi);
      CAPTURE(act);
      ModelBuilder m;
      m.input("x", {N, C, H, W}).output("y");
      if (z == Z::broadcast) m.input("zb", {C, 1, 1});
      m.node("Conv", {"x", "w", "b"}, {"c"}, {onnx_test::attr_ints("pads", {1, 1, 1, 1})});
      if (z == Z::later) m.node("Neg", {"x"}, {"negx"});
      const std::string zname = z == Z::shortcut ? "x" : z == Z::later ? "negx" : "zb";
      const std::string sum = *act ? "s" : "y";
      m.node("Add", z == Z::later ? std::vector<std::string>{zname, "c"}
                                  : std::vector<std::string>{"c", zname}, {sum});
      if (std::string(act) == "Relu") m.node("Relu", {"s"}, {"y"});
      if (std::string(act) == "Clip") m.node("Clip", {"s", "lo", "hi"}, {"y"});
      m.init("w", {C, C, 3, 3}, wv);
      m.init("b", {C}, bv);
      m.init("lo", {}, {-0.5f});
      m.init("hi", {}, {0.8f});
      std::vector<double> want(conv.size());
      for (size_t i = 0; i < want.size(); ++i) {
        const size_t k = i / (H * W) % C;
        const double zv = z == Z::shortcut ? xv[i] : z == Z::later ? -xv[i] : zb[k];
        want[i] = conv[i] + zv;
        if (std::string(act) == "Relu") want[i] = std::max(want[i], 0.0);
        if (std::string(act) == "Clip") want[i] = std::min(std::max(want[i], -0.5), 0.8);
      }
      const std::string bytes = m.bytes();
      for (const Device dev : {kCPU, Device(DeviceType::EMU, 0)})
        for (bool optimize : {false, true}) {
          CAPTURE(dev);
          CAPTURE(optimize);
          eo::LoadOptions opts;
          opts.device = dev;
          opts.optimize = optimize;
          const auto model = eo::load_from_memory(bytes.data(), bytes.size(), opts);
          const int unfused = 2 + (*act ? 1 : 0) + (z == Z::later ? 1 : 0);
          CHECK(model.num_nodes() == (optimize ? unfused - 1 - (*act ? 1 : 0) : unfused));
          CHECK(model.passes().fused_adds == (optimize ? 1 : 0));
          std::vector<Tensor> in{from_vector(xv, {N, C, H, W})};
          if (z == Z::broadcast) in.push_back(from_vector(zb, {C, 1, 1}));
          const auto got = model.run(in)[0].to(kCPU).to_vector<float>();
          REQUIRE(got.size() == want.size());
          for (size_t i = 0; i < got.size(); ++i)
            CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(1.0));
        }
    }
}

TEST_CASE("onnx run: a Conv prepared at one run serves the next, and prepares again for others") {
  // Note [Prepared convolutions]: relu(conv(x) + x) and conv(x) on a symbolic batch, run at
  // batch 1 twice, then 3, then 1 again, then with another algorithm forced; every run against
  // the float64 loop, and the forced one running the algorithm forced.
  constexpr int C = 4, H = 5, W = 6;
  const uint32_t seed = std::random_device{}();
  CAPTURE(seed);
  const std::vector<float> wv = random_values(C * C * 9, seed + 1), bv = random_values(C, seed + 2);
  ModelBuilder m;
  m.input("x", {-1, C, H, W}).output("y").output("c2");
  m.node("Conv", {"x", "w", "b"}, {"c"}, {onnx_test::attr_ints("pads", {1, 1, 1, 1})}, "conv1");
  m.node("Add", {"c", "x"}, {"s"});
  m.node("Relu", {"s"}, {"y"});
  m.node("Conv", {"x", "w", "b"}, {"c2"}, {onnx_test::attr_ints("pads", {1, 1, 1, 1})}, "conv2");
  m.init("w", {C, C, 3, 3}, wv);
  m.init("b", {C}, bv);
  const std::string bytes = m.bytes();
  auto model = eo::load_from_memory(bytes.data(), bytes.size());
  REQUIRE(model.passes().fused_adds == 1);
  int run = 0;
  for (const int n : {1, 1, 3, 1, 1}) {
    CAPTURE(run);
    const bool forced = run++ == 4;
    if (forced) {
      ops::set_conv_algo("direct");
      model.set_profiling(true);
    }
    const std::vector<float> xv = random_values(n * C * H * W, seed + 3 + run);
    const std::vector<double> conv = conv3x3(xv, wv, bv, n, C, C, H, W);
    const auto out = model.run({from_vector(xv, {n, C, H, W})});
    const auto y = out[0].to_vector<float>(), c2 = out[1].to_vector<float>();
    REQUIRE(y.size() == conv.size());
    REQUIRE(c2.size() == conv.size());
    for (size_t i = 0; i < conv.size(); ++i) {
      CHECK(y[i] == doctest::Approx(std::max(conv[i] + xv[i], 0.0)).epsilon(1e-5).scale(1.0));
      CHECK(c2[i] == doctest::Approx(conv[i]).epsilon(1e-5).scale(1.0));
    }
    if (forced) {
      for (const eo::NodeTiming& t : model.last_run().nodes) {
        CAPTURE(t.node);
        REQUIRE(!t.calls.empty());
        CHECK(t.calls.back().find("direct") != std::string::npos);
      }
      ops::set_conv_algo("");
      ops::clear_conv_algo_cache();
    }
  }
}

TEST_CASE("onnx run: constants are folded and nodes no output needs are removed") {
  ModelBuilder m;
  m.input("x", {2}).output("y");
  m.node("Add", {"a", "b"}, {"ab"}, {}, "constant sum");   // both initializers: folded
  m.node("Mul", {"x", "ab"}, {"y"}, {}, "scale");
  m.node("Neg", {"x"}, {"unused"}, {}, "dead");            // nothing reads it
  m.init("a", {2}, {1, 2});
  m.init("b", {2}, {3, 4});
  const std::string bytes = m.bytes();
  const auto model = eo::load_from_memory(bytes.data(), bytes.size());
  CHECK(model.passes().folded_constants == 1);
  CHECK(model.passes().removed_nodes == 1);
  CHECK(model.num_nodes() == 1);
  CHECK(model.run({from_vector<float>({2, -1})})[0].to_vector<float>() == std::vector<float>{8, -6});
}

TEST_CASE("onnx run: each intermediate is freed after its last reader") {
  // x -> Neg -> Neg -> ... (12 nodes) on 4 MiB tensors: kept alive, they would need 13 x 4 MiB.
  const int64_t n = 1 << 20;
  ModelBuilder m;
  m.input("x", {n}).output("v12");
  for (int i = 1; i <= 12; ++i)
    m.node("Neg", {i == 1 ? "x" : "v" + std::to_string(i - 1)}, {"v" + std::to_string(i)});
  const std::string bytes = m.bytes();
  const auto model = eo::load_from_memory(bytes.data(), bytes.size());
  const Tensor x = ones({n});
  const auto y = model.run({x})[0];
  CHECK(y.to_vector<float>()[123] == 1.0f);
  const size_t size = static_cast<size_t>(n) * 4;
  CHECK(model.last_run().peak_bytes <= 4 * size);  // the input, two live values, slack
}

TEST_CASE("onnx run: profiling times every node and names the kernels it ran") {
  ModelBuilder m;
  m.input("x", {1, 2, 5, 5}).output("y");
  m.node("Conv", {"x", "w"}, {"c"}, {}, "conv");
  m.node("Sigmoid", {"c"}, {"y"}, {}, "act");
  m.init("w", {3, 2, 3, 3}, random_values(54, 9));
  const std::string bytes = m.bytes();
  auto model = eo::load_from_memory(bytes.data(), bytes.size());
  model.set_profiling(true);
  model.run({ones({1, 2, 5, 5})});
  const auto nodes = model.last_run().nodes;
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].node == "conv");
  REQUIRE(!nodes[0].calls.empty());
  CHECK(nodes[0].calls[0].find("conv2d") != std::string::npos);
  model.set_profiling(false);
  model.run({ones({1, 2, 5, 5})});
  CHECK(model.last_run().nodes.empty());
}

TEST_CASE("onnx run: Relu, Clip and Add write into an input only where the node owns it") {
  // a = -x; r = relu(a) (a's last reader: in place); c = clip(r, -0.5, 0.7) (r read again later:
  // a new tensor); s = c + r (both die here); t = s + s (one value twice: a new tensor);
  // k = relu(x) (a graph input: never written). Outputs t and k; x must come back unchanged.
  for (const Device dev : {kCPU, Device(DeviceType::EMU, 0)}) {
    CAPTURE(dev);
    ModelBuilder m;
    m.input("x", {2, 29}).output("t").output("k");
    m.node("Neg", {"x"}, {"a"});
    m.node("Relu", {"a"}, {"r"});
    m.node("Clip", {"r", "lo", "hi"}, {"c"});
    m.node("Add", {"c", "r"}, {"s"});
    m.node("Add", {"s", "s"}, {"t"});
    m.node("Relu", {"x"}, {"k"});
    m.init("lo", {}, {-0.5f});
    m.init("hi", {}, {0.7f});
    const std::string bytes = m.bytes();
    eo::LoadOptions options;
    options.device = dev;
    const auto model = eo::load_from_memory(bytes.data(), bytes.size(), options);
    const std::vector<float> xv = random_values(58, std::random_device{}());
    const Tensor x = from_vector(xv, {2, 29}).to(dev);
    const auto out = model.run({x});
    const std::vector<float> t = out[0].to(kCPU).to_vector<float>();
    const std::vector<float> k = out[1].to(kCPU).to_vector<float>();
    CHECK(x.to(kCPU).to_vector<float>() == xv);
    for (size_t i = 0; i < xv.size(); ++i) {
      const float r = std::max(-xv[i], 0.0f), c = std::min(std::max(r, -0.5f), 0.7f);
      CHECK(t[i] == (c + r) + (c + r));
      CHECK(k[i] == std::max(xv[i], 0.0f));
    }
  }
}

TEST_CASE("onnx run: a chain of activations reuses one buffer") {
  // x -> Neg -> Relu -> Clip -> Relu ... on 4 MiB tensors: each activation writes into the value
  // it reads last, so the run holds the input and one value (new tensors would need a third).
  const int64_t n = 1 << 20;
  ModelBuilder m;
  m.input("x", {n}).output("v8");
  m.node("Neg", {"x"}, {"v0"});
  for (int i = 1; i <= 8; ++i)
    m.node(i % 2 ? "Relu" : "Clip", {"v" + std::to_string(i - 1)}, {"v" + std::to_string(i)});
  const std::string bytes = m.bytes();
  const auto model = eo::load_from_memory(bytes.data(), bytes.size());
  const Tensor x = full({n}, -2.0);
  CHECK(model.run({x})[0].to_vector<float>()[77] == 2.0f);
  const size_t size = static_cast<size_t>(n) * 4;
  CHECK(model.last_run().peak_bytes < size * 5 / 2);  // x and one value
}

TEST_CASE("onnx run: Dropout in training mode zeroes a ratio of the elements and scales the rest") {
  // ratio 0.75 on 4096 elements: the kept fraction within 5 standard deviations of 0.25; each
  // output x / 0.25 where kept, else 0; the same mask from the same seed.
  const int64_t n = 4096;
  ModelBuilder m;
  m.input("x", {n}).input("training", {}, ::onnx::TensorProto::BOOL);
  m.output("y").output("mask", ::onnx::TensorProto::BOOL);
  m.node("Dropout", {"x", "ratio", "training"}, {"y", "mask"}, {onnx_test::attr_i("seed", 7)});
  m.init("ratio", {}, {0.75f});
  const std::string bytes = m.bytes();
  const auto model = eo::load_from_memory(bytes.data(), bytes.size());
  const std::vector<float> xv = random_values(n, 3);
  const Tensor x = from_vector(xv, {n}), on = full({}, 1.0, kBool);
  const auto out = model.run(std::vector<Tensor>{x, on});
  const std::vector<float> y = out[0].to_vector<float>();
  const std::vector<bool> mask = out[1].to_vector<bool>();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    kept += mask[i];
    CHECK(y[i] == doctest::Approx(mask[i] ? xv[i] / 0.25f : 0.0f).epsilon(1e-6));
  }
  CHECK(std::abs(double(kept) / n - 0.25) <= 5 * std::sqrt(0.25 * 0.75 / n));
  CHECK(model.run(std::vector<Tensor>{x, on})[1].to_vector<bool>() == mask);
  // Not training: the identity, every mask element true.
  const auto eval = model.run(std::vector<Tensor>{x, full({}, 0.0, kBool)});
  CHECK(eval[0].to_vector<float>() == xv);
  CHECK(eval[1].to_vector<bool>() == std::vector<bool>(n, true));
}

TEST_CASE("onnx run: Gemm as a fully connected layer (transB, a bias of N) equals the float64 sums") {
  // PyTorch exports nn.Linear so; it runs as the linear layer (the bias added in place). A [1, N]
  // bias, or alpha, keeps the general path: both against the same loop.
  constexpr int M = 5, K = 19, N = 7;
  const auto a = random_values(M * K, 31), b = random_values(N * K, 32), c = random_values(N, 33);
  for (bool vector_bias : {true, false})
    for (double alpha : {1.0, 0.5}) {
      ModelBuilder m;
      m.input("a", {M, K});
      m.node("Gemm", {"a", "b", "c"}, {"y"},
             {onnx_test::attr_i("transB", 1), onnx_test::attr_f("alpha", static_cast<float>(alpha))}, "fc");
      m.init("b", {N, K}, b);
      m.init("c", vector_bias ? std::vector<int64_t>{N} : std::vector<int64_t>{1, N}, c);
      m.output("y");
      const std::string bytes = m.bytes();
      for (const char* dev : {"cpu", "emu"}) {
        CAPTURE(dev);
        CAPTURE(vector_bias);
        CAPTURE(alpha);
        eo::LoadOptions opts;
        opts.device = Device::parse(dev);
        const auto model = eo::load_from_memory(bytes.data(), bytes.size(), opts);
        const auto got = model.run({from_vector(a, {M, K})})[0];
        REQUIRE(got.shape() == Shape{M, N});
        const auto y = got.to_vector<float>();
        for (int i = 0; i < M; ++i)
          for (int j = 0; j < N; ++j) {
            double s = 0;
            for (int k = 0; k < K; ++k) s += double(a[i * K + k]) * b[j * K + k];
            CHECK(y[i * N + j] == doctest::Approx(alpha * s + c[j]).epsilon(1e-5));
          }
      }
    }
}

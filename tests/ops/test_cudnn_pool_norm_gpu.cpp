// Pooling and batch norm on cuDNN on a real GPU (ops/cudnn/pool_norm.h, ops/cudnn_ops.h): max,
// average (padding counted and not) and adaptive average pooling, batch norm in training and
// eval with and without affine parameters, forward and backward against a float64 reference on
// the cpu, with cuDNN shown to have run them; the persistent mode; the benchmark preference
// choosing per shape and giving the same numbers. Runs in the `gpu` executable.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/build_config.h"

#if EMBER_HAVE_CUDNN

#include "ops/batch_norm.h"
#include "ops/conv2d_cudnn.h"
#include "ops/cudnn_ops.h"
#include "ops/elementwise.h"
#include "ops/pool2d.h"
#include "runtime/rng.h"

using namespace ember;

namespace {

const Device kCuda0(DeviceType::CUDA, 0);

// max |got - want| / max |want|.
double rel_error(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = got.to(kFloat64).to(kCPU).to_vector<double>();
  const std::vector<double> w = want.to(kFloat64).to(kCPU).to_vector<double>();
  REQUIRE(g.size() == w.size());
  double d = 0, m = 0;
  for (size_t i = 0; i < w.size(); ++i)
    d = std::max(d, std::abs(g[i] - w[i])), m = std::max(m, std::abs(w[i]));
  return d / (m > 0 ? m : 1);
}

Tensor cpu64(const Tensor& t) {
  return t.to(kCPU).to(kFloat64);
}

struct PoolCase {
  Shape x;
  int64_t k, stride, pad;
};
const PoolCase kPools[] = {{{2, 3, 17, 19}, 3, 2, 1},
                           {{4, 16, 14, 14}, 2, 2, 0},
                           {{1, 8, 9, 9}, 3, 1, 1},
                           {{8, 64, 56, 56}, 3, 2, 1},
                           {{2, 5, 11, 13}, 5, 3, 2}};

}  // namespace

TEST_CASE("cudnn on cuda:0: pooling forward and backward against float64, cuDNN running") {
  manual_seed(5);
  for (const PoolCase& c : kPools) {
    CAPTURE(c.x);
    const Tensor x = randn(c.x).to(kCuda0);
    ops::MaxPool2dParams mp;
    mp.kernel = {c.k, c.k}, mp.stride = {c.stride, c.stride}, mp.padding = {c.pad, c.pad};
    const auto [y, idx] = ops::max_pool2d(x, mp, /*need_indices=*/false);
    CHECK_FALSE(idx.defined());  // cuDNN ran: it has no indices
    const auto [yr, idxr] = ops::max_pool2d(cpu64(x), mp);
    CHECK(rel_error(y, yr) == 0);
    const Tensor g = randn(y.shape()).to(kCuda0);
    CHECK(rel_error(ops::max_pool2d_backward(g, x, y, mp),
                    ops::max_pool2d_backward(cpu64(g), idxr, c.x)) <= 1e-6);
    for (bool include_pad : {true, false}) {
      CAPTURE(include_pad);
      ops::AvgPool2dParams ap;
      ap.kernel = mp.kernel, ap.stride = mp.stride, ap.padding = mp.padding;
      ap.count_include_pad = include_pad;
      const Tensor ya = ops::avg_pool2d(x, ap);
      CHECK(rel_error(ya, ops::avg_pool2d(cpu64(x), ap)) <= 1e-6);
      const Tensor ga = randn(ya.shape()).to(kCuda0);
      CHECK(rel_error(ops::avg_pool2d_backward(ga, c.x, ap),
                      ops::avg_pool2d_backward(cpu64(ga), c.x, ap)) <= 1e-6);
    }
  }
  // Adaptive average pooling: the global pooling of ResNet's head, and 2x2 of a 6x8 plane.
  for (std::array<int64_t, 2> out : {std::array<int64_t, 2>{1, 1}, std::array<int64_t, 2>{2, 2}}) {
    const Tensor x = randn({4, 32, 6, 8}).to(kCuda0);
    kernels::PoolShape s;
    s.n = 4, s.c = 32, s.h = 6, s.w = 8, s.oh = out[0], s.ow = out[1];
    s.kh = s.sh = 6 / out[0], s.kw = s.sw = 8 / out[1];
    Tensor y = empty({4, 32, out[0], out[1]}, {kFloat32, kCuda0});
    CHECK(ops::run_pool_forward(kCuda0, ops::PoolMode::avg, kFloat32, s, x.data_ptr(), y.data_ptr(),
                                [](bool) { FAIL("Ember's kernel ran"); }));
    CHECK(rel_error(ops::adaptive_avg_pool2d(x, out), ops::adaptive_avg_pool2d(cpu64(x), out)) <=
          1e-6);
    const Tensor g = randn({4, 32, out[0], out[1]}).to(kCuda0);
    CHECK(rel_error(ops::adaptive_avg_pool2d_backward(g, x.shape()),
                    ops::adaptive_avg_pool2d_backward(cpu64(g), x.shape())) <= 1e-6);
  }
  // A dilated window: cuDNN has none, Ember's kernel runs and says so by its indices.
  ops::MaxPool2dParams dil;
  dil.kernel = {3, 3}, dil.dilation = {2, 2};
  CHECK(ops::max_pool2d(randn({1, 2, 9, 9}).to(kCuda0), dil, false).second.defined());
}

TEST_CASE("cudnn on cuda:0: batch norm in training and eval against float64") {
  manual_seed(9);
  for (bool persistent : {false, true}) {
    ops::set_cudnn_batch_norm_persistent(persistent);
    for (bool affine : {true, false}) {
      for (const Shape& xs : {Shape{8, 16, 7, 7}, Shape{3, 5, 11, 13}, Shape{32, 24}}) {
        CAPTURE(persistent);
        CAPTURE(affine);
        CAPTURE(xs);
        const int64_t c = xs[1];
        const Tensor x = ops::add(ops::mul(randn(xs), 2.0), 0.5).to(kCuda0);
        Tensor w, b;
        if (affine) w = ops::add(rand({c}), 0.5).to(kCuda0), b = randn({c}).to(kCuda0);
        Tensor rm = zeros({c}).to(kCuda0), rv = ones({c}).to(kCuda0);
        Tensor rm64 = zeros({c}, kFloat64), rv64 = ones({c}, kFloat64);
        const Tensor w64 = affine ? cpu64(w) : Tensor(), b64 = affine ? cpu64(b) : Tensor();
        const ops::BatchNormOutput got = ops::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5);
        const ops::BatchNormOutput want =
            ops::batch_norm(cpu64(x), w64, b64, rm64, rv64, true, 0.1, 1e-5);
        CHECK(rel_error(got.out, want.out) <= 1e-5);
        CHECK(rel_error(got.save_mean, want.save_mean) <= 1e-5);
        CHECK(rel_error(got.save_invstd, want.save_invstd) <= 1e-5);
        CHECK(rel_error(rm, rm64) <= 1e-5);
        CHECK(rel_error(rv, rv64) <= 1e-5);  // the unbiased variance, as PyTorch
        const Tensor g = randn(xs).to(kCuda0);
        const ops::BatchNormGrads gg = ops::batch_norm_backward(
            g, x, w, got.save_mean, got.save_invstd, true, true, affine, affine, got.reserve);
        const ops::BatchNormGrads gw = ops::batch_norm_backward(
            cpu64(g), cpu64(x), w64, want.save_mean, want.save_invstd, true, true, affine, affine);
        CHECK(rel_error(gg.grad_input, gw.grad_input) <= 1e-4);
        if (affine) {
          CHECK(rel_error(gg.grad_weight, gw.grad_weight) <= 1e-4);
          CHECK(rel_error(gg.grad_bias, gw.grad_bias) <= 1e-4);
        }
        // Eval from the running statistics.
        const ops::BatchNormOutput e = ops::batch_norm(x, w, b, rm, rv, false, 0.1, 1e-5);
        const ops::BatchNormOutput ew =
            ops::batch_norm(cpu64(x), w64, b64, rm64, rv64, false, 0.1, 1e-5);
        CHECK(rel_error(e.out, ew.out) <= 1e-5);
        CHECK(rel_error(e.save_invstd, ew.save_invstd) <= 1e-5);
      }
    }
  }
  ops::set_cudnn_batch_norm_persistent(false);
}

TEST_CASE("cudnn on cuda:0: the benchmark preference picks per shape and changes no number") {
  manual_seed(13);
  const size_t before = ops::backend_verdicts().size();
  for (ops::CudnnOp op : {ops::CudnnOp::pooling, ops::CudnnOp::batch_norm})
    ops::set_backend_preference(op, ops::BackendPreference::benchmark);
  const Tensor x = randn({8, 32, 28, 28}).to(kCuda0);
  ops::MaxPool2dParams mp;
  mp.kernel = {3, 3}, mp.stride = {2, 2}, mp.padding = {1, 1};
  const Tensor y = ops::max_pool2d(x, mp, false).first;
  CHECK(rel_error(y, ops::max_pool2d(cpu64(x), mp).first) == 0);
  Tensor rm = zeros({32}).to(kCuda0), rv = ones({32}).to(kCuda0);
  Tensor rm64 = zeros({32}, kFloat64), rv64 = ones({32}, kFloat64);
  // Timing leaves the running statistics alone: one update, as without the benchmark.
  const ops::BatchNormOutput got = ops::batch_norm(x, {}, {}, rm, rv, true, 0.1, 1e-5);
  const ops::BatchNormOutput want = ops::batch_norm(cpu64(x), {}, {}, rm64, rv64, true, 0.1, 1e-5);
  CHECK(rel_error(got.out, want.out) <= 1e-5);
  CHECK(rel_error(rm, rm64) <= 1e-5);
  CHECK(rel_error(rv, rv64) <= 1e-5);
  CHECK(ops::backend_verdicts().size() >= before + 2);
  // ResNet-50's stem: its max pooling and batch norm, forward and backward, timed both ways.
  const Tensor stem = randn({8, 64, 112, 112}).to(kCuda0);
  ops::AvgPool2dParams ap;
  ap.kernel = {2, 2};
  const Tensor ym = ops::max_pool2d(stem, mp, false).first;
  ops::max_pool2d_backward(ops::mul(ym, 0.5), stem, ym, mp);
  ops::avg_pool2d(stem, ap);
  Tensor srm = zeros({64}).to(kCuda0), srv = ones({64}).to(kCuda0);
  const ops::BatchNormOutput sb = ops::batch_norm(stem, {}, {}, srm, srv, true, 0.1, 1e-5);
  ops::batch_norm_backward(stem, stem, {}, sb.save_mean, sb.save_invstd, true, true, false, false,
                           sb.reserve);
  ops::batch_norm(stem, {}, {}, srm, srv, false, 0.1, 1e-5);
  for (const auto& [key, v] : ops::backend_verdicts().entries())
    if (key.find("8x64x112x112") != std::string::npos)
      MESSAGE("backend verdict | " << key << " -> " << (v.cudnn ? "cuDNN" : "Ember") << " ("
                                   << v.reason << ")");
  for (ops::CudnnOp op : {ops::CudnnOp::pooling, ops::CudnnOp::batch_norm})
    ops::set_backend_preference(op, ops::BackendPreference::prefer_cudnn);
}

#endif  // EMBER_HAVE_CUDNN

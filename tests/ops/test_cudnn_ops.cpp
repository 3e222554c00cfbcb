// Who runs activations, softmax, pooling and batch norm (ops/cudnn_ops.h), without a GPU: the
// benchmark preference's verdicts on made-up timings, the per-op preferences and their names,
// cuDNN's refusals of pooling and batch-norm cases it computes differently, and the cpu paths of
// the forms made for cuDNN (max pooling without indices, its backward from x and y).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "ember/build_config.h"
#include "ops/conv2d.h"
#include "ops/conv2d_cudnn.h"
#include "ops/cudnn_ops.h"
#include "ops/op_test_util.h"
#include "ops/pool2d.h"
#include "runtime/rng.h"

#if EMBER_HAVE_CUDNN
#include "ops/cudnn/pool_norm.h"
#endif

namespace ember::test {

TEST_CASE("backend verdicts: the faster side wins, once per key; cuDNN wins ties") {
  ops::BackendVerdicts v;
  int timed = 0;
  auto ms = [&](double t) {
    return [&timed, t] {
      ++timed;
      return t;
    };
  };
  bool fresh = false;
  ops::BackendVerdict a = v.choose("relu f32 n=10", ms(0.5), ms(1.0), &fresh);
  CHECK(fresh);
  CHECK(a.cudnn);
  CHECK(a.cudnn_ms == 0.5);
  CHECK(a.ember_ms == 1.0);
  CHECK(a.reason == "cuDNN 0.5 ms, Ember's kernel 1 ms");
  CHECK(timed == 2);
  // Known: not measured again, whatever the timers would say now.
  a = v.choose("relu f32 n=10", ms(9.0), ms(0.1), &fresh);
  CHECK_FALSE(fresh);
  CHECK(a.cudnn);
  CHECK(timed == 2);
  CHECK_FALSE(v.choose("relu f32 n=20", ms(2.0), ms(1.5)).cudnn);
  CHECK(v.choose("tie", ms(1.0), ms(1.0)).cudnn);
  const ops::BackendVerdict lacks = v.choose("dilated pooling", ms(-1.0), ms(0.25));
  CHECK_FALSE(lacks.cudnn);
  CHECK(lacks.cudnn_ms == -1);
  CHECK(lacks.reason == "cuDNN lacks the case; Ember's kernel 0.25 ms");
  CHECK(v.size() == 4);
  const auto entries = v.entries();
  REQUIRE(entries.size() == 4);
  CHECK(entries.front().first == "dilated pooling");  // by key
  v.clear();
  CHECK(v.size() == 0);
}

TEST_CASE("backend preferences: every op cuDNN runs, three preferences, names both ways") {
  for (const char* name : {"conv2d", "activation", "softmax", "pooling", "batch_norm"}) {
    CAPTURE(name);
    const ops::CudnnOp op = ops::parse_cudnn_op(name);
    CHECK(std::string(ops::cudnn_op_name(op)) == name);
    CHECK(ops::backend_preference(op) == ops::BackendPreference::prefer_cudnn);
    for (const char* p : {"prefer-ember", "benchmark", "prefer-cudnn"}) {
      ops::set_backend_preference(op, ops::parse_backend_preference(p));
      CHECK(std::string(ops::backend_preference_name(ops::backend_preference(op))) == p);
    }
  }
  CHECK_THROWS_WITH_AS(ops::parse_backend_preference("fastest"),
                       doctest::Contains("expected prefer-cudnn, prefer-ember or benchmark"),
                       ValueError);
  CHECK_FALSE(ops::cudnn_batch_norm_persistent());
  ops::set_cudnn_batch_norm_persistent(true);
  CHECK(ops::cudnn_batch_norm_persistent());
  ops::set_cudnn_batch_norm_persistent(false);
}

TEST_CASE("conv2d's benchmark preference times cuda keys only") {
  const ops::ConvKey cpu =
      ops::conv2d_key(ops::ConvDirection::forward, {1, 2, 6, 6}, {3, 2, 3, 3}, kFloat32, kCPU, {});
  ops::set_conv_backend_preference(ops::BackendPreference::benchmark);
  CHECK(ops::explain_conv_algos(cpu).policy == ops::ConvPolicy::heuristic);
  ops::set_conv_backend_preference(ops::BackendPreference::prefer_cudnn);
}

TEST_CASE("max pooling without indices and its backward from x and y, on the cpu") {
  manual_seed(11);
  const Tensor x = randn({2, 3, 9, 8});
  ops::MaxPool2dParams p;
  p.kernel = {3, 3}, p.stride = {2, 2}, p.padding = {1, 1};
  const auto [y, idx] = ops::max_pool2d(x, p, /*need_indices=*/false);
  CHECK(idx.defined());  // Ember's kernel ran: it always has them
  const auto [y1, idx1] = ops::max_pool2d(x, p);
  CHECK(y.to_vector<float>() == y1.to_vector<float>());
  const Tensor g = randn(y.shape());
  // The same sums in the same order: exactly the backward by indices.
  CHECK(ops::max_pool2d_backward(g, x, y, p).to_vector<float>() ==
        ops::max_pool2d_backward(g, idx1, x.shape()).to_vector<float>());
  CHECK_THROWS_WITH_AS(ops::max_pool2d_backward(g, x, g.slice(3, 0, 2), p),
                       doctest::Contains("expected the forward's output y of shape"), ShapeError);
}

#if EMBER_HAVE_CUDNN

TEST_CASE("cuDNN's pooling refuses what it computes differently, and says why") {
  using ops::cudnn::pool_refusal;
  using ops::cudnn::PoolKind;
  kernels::PoolShape s;
  s.n = 2, s.c = 3, s.h = 9, s.w = 8, s.kh = s.kw = 3, s.sh = s.sw = 2, s.ph = s.pw = 1;
  s.oh = 5, s.ow = 4;  // floor((9 + 2 - 3) / 2) + 1, floor((8 + 2 - 3) / 2) + 1
  CHECK(pool_refusal(PoolKind::max, s) == nullptr);
  CHECK(pool_refusal(PoolKind::avg, s) == nullptr);
  kernels::PoolShape c = s;
  c.ow = 5;  // ceil_mode's extra window
  CHECK(std::string(pool_refusal(PoolKind::max, c)).find("ceil_mode") != std::string::npos);
  kernels::PoolShape d = s;
  d.dh = 2, d.oh = 4;
  CHECK(std::string(pool_refusal(PoolKind::max, d)) == "cuDNN's pooling has no dilation");
  kernels::PoolShape o = s;
  o.divisor_override = 4;
  CHECK(pool_refusal(PoolKind::max, o) == nullptr);  // max pooling has no divisor
  CHECK(std::string(pool_refusal(PoolKind::avg, o)) == "cuDNN's pooling has no divisor_override");
  kernels::PoolShape big = s;
  big.n = int64_t{1} << 26;
  big.c = 64;
  CHECK(std::string(pool_refusal(PoolKind::avg, big)) == "a tensor of 2^31 elements or more");
}

TEST_CASE("cuDNN's batch norm refuses dtypes and sizes it cannot describe") {
  ops::cudnn::BatchNormCall c;
  c.s.n = 8, c.s.c = 16, c.s.s = 49;
  CHECK(ops::cudnn::batch_norm_refusal(c) == nullptr);
  c.t = DType::f64;
  CHECK(ops::cudnn::batch_norm_refusal(c) == nullptr);
  c.t = DType::i32;
  CHECK(std::string(ops::cudnn::batch_norm_refusal(c)).find("float32 or float64") !=
        std::string::npos);
  c.t = DType::f32;
  c.s.s = int64_t{1} << 28;
  CHECK(std::string(ops::cudnn::batch_norm_refusal(c)) == "a tensor of 2^31 elements or more");
  c.s.s = 49;
  c.eps = std::nan("");
  CHECK(std::string(ops::cudnn::batch_norm_refusal(c)).find("CUDNN_BN_MIN_EPSILON") !=
        std::string::npos);
}

#endif  // EMBER_HAVE_CUDNN

}  // namespace ember::test

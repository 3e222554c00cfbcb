// DistributedDataParallel and SyncBatchNorm under mpirun (2 and 3 ranks): training at world size
// W against one process on the global batch (each rank computes that reference itself), the
// buckets' order and their overlap with the backward pass, no_sync, the checks at start, and
// checkpoints.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/loss.h"
#include "dist/ddp.h"
#include "dist/sync_batch_norm.h"
#include "dist_test_util.h"
#include "nn/checkpoint.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "nn/linear.h"
#include "nn/models.h"
#include "nn/optim.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "runtime/rng.h"

using namespace ember;
using namespace ember::dist;
using ember::test::group;

namespace {

using Factory = std::function<nn::ModulePtr()>;

nn::ModulePtr mlp() {
  return std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Linear>(12, 16), nn::ReLU(), std::make_shared<nn::Linear>(16, 10)});
}

nn::ModulePtr conv_bn() {
  const auto pad = Conv2dOptions().padding(1);
  return std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Conv2d>(3, 6, 3, pad), std::make_shared<nn::BatchNorm2d>(6), nn::ReLU(),
      std::make_shared<nn::Conv2d>(6, 6, 3, pad), std::make_shared<nn::BatchNorm2d>(6), nn::ReLU(),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(6 * 6 * 6, 10)});
}

// This rank's contiguous share of rows [0, b) (the rule of cli/train_distributed.h).
std::pair<int64_t, int64_t> share(int64_t b, int w, int r) {
  const int64_t base = b / w, extra = b % w;
  const int64_t start = r * base + std::min<int64_t>(r, extra);
  return {start, start + base + (r < extra ? 1 : 0)};
}

struct Run {
  std::vector<double> losses;
  std::vector<Tensor> params;
};

// `steps` SGD steps (momentum 0.9) on fresh random global batches [b, shape...]; distributed:
// DDP over the default group, each rank on its share with its loss weighted by W * share / b.
Run train(const Factory& make, bool distributed, bool sync_bn, int steps, int64_t b,
          const Shape& sample, double lr = 0.05, DType dtype = kFloat32) {
  manual_seed(1234);
  nn::ModulePtr model = make();
  model->to(dtype);
  ProcessGroup& g = group();
  std::shared_ptr<DistributedDataParallel> ddp;
  if (distributed) {
    if (sync_bn) convert_sync_batchnorm(*model);
    DdpOptions o;
    o.bucket_cap_mb = 0.002;  // several buckets even for these small models
    ddp = std::make_shared<DistributedDataParallel>(model, default_group_ptr(), o);
  }
  nn::SGD opt(model->parameters(), nn::SGDOptions{lr, 0.9});
  Generator data(99);
  Run run;
  Shape batch_shape{b};
  batch_shape.insert(batch_shape.end(), sample.begin(), sample.end());
  for (int s = 0; s < steps; ++s) {
    Tensor x = randn(batch_shape, {}, &data).to(dtype);
    Tensor y = ops::argmax(rand({b, 10}, {}, &data), 1);  // random labels, every rank alike
    opt.zero_grad();
    if (!distributed) {
      Tensor loss = cross_entropy((*model)(x), y);
      backward(loss);
      run.losses.push_back(loss.item());
    } else {
      const auto [lo, hi] = share(b, g.size(), g.rank());
      Tensor loss =
          cross_entropy((*ddp)(x.slice(0, lo, hi).contiguous()), y.slice(0, lo, hi).contiguous());
      backward(loss * (static_cast<double>(g.size()) * (hi - lo) / b));
      Tensor total = full({1}, loss.item() * (hi - lo), kFloat64);
      g.all_reduce(total)->wait();
      run.losses.push_back(total.item() / b);
    }
    opt.step();
  }
  for (const Tensor& p : model->parameters()) run.params.push_back(p.clone());
  return run;
}

void check_same_training(const Run& ref, const Run& got, double rtol) {
  REQUIRE(ref.losses.size() == got.losses.size());
  double worst = 0;
  for (size_t i = 0; i < ref.losses.size(); ++i)
    worst = std::max(worst, std::fabs(got.losses[i] - ref.losses[i]) / std::fabs(ref.losses[i]));
  std::printf("rank %d: %zu steps, largest relative loss difference %.3g (allowed %.0e)\n",
              group().rank(), ref.losses.size(), worst, rtol);
  CHECK(worst <= rtol);
  REQUIRE(ref.params.size() == got.params.size());
  for (size_t i = 0; i < ref.params.size(); ++i) {
    const auto a = ref.params[i].to_vector<double>(), b = got.params[i].to_vector<double>();
    double diff = 0, scale = 1e-3;
    for (size_t k = 0; k < a.size(); ++k) {
      diff = std::max(diff, std::fabs(a[k] - b[k]));
      scale = std::max(scale, std::fabs(a[k]));
    }
    CHECK(diff <= 1e-4 * scale);
  }
}

}  // namespace

TEST_CASE("DDP: an MLP at world size W trains as one process on the global batch (50 steps)") {
  // 12 divides by 2 and 3; 13 does not (shares 7/6, 5/4/4): the weighted losses keep it exact.
  for (int64_t b : {12, 13}) {
    CAPTURE(b);
    const Run ref = train(mlp, false, false, 50, b, {12});
    const Run got = train(mlp, true, false, 50, b, {12});
    check_same_training(ref, got, 1e-5);
  }
}

TEST_CASE("DDP + SyncBatchNorm: a conv net with batch norm trains as one process (30 steps)") {
  const Run ref = train(conv_bn, false, false, 30, 10, {3, 6, 6});
  const Run got = train(conv_bn, true, true, 30, 10, {3, 6, 6});
  check_same_training(ref, got, 1e-5);
}

TEST_CASE("DDP + SyncBatchNorm: ResNet-20 on random data trains as one process (50 steps)") {
  // float64: in float32, ResNet-20's ~10^6 ReLU inputs include some within float32's rounding of
  // zero, and any change of rounding (here the split of the batch's sums; between two single
  // processes, another convolution algorithm) flips one now and then; the runs then part by 1e-5
  // within a few steps (docs/distributed.md). In float64 they agree to about 1e-13.
  auto resnet = [] { return nn::resnet20({3, 16, 10}); };
  const Run ref = train(resnet, false, false, 50, 16, {3, 16, 16}, 0.05, kFloat64);
  const Run got = train(resnet, true, true, 50, 16, {3, 16, 16}, 0.05, kFloat64);
  check_same_training(ref, got, 1e-5);
}

TEST_CASE(
    "SyncBatchNorm: forward, backward and running statistics equal BatchNorm2d's over the global "
    "batch") {
  ProcessGroup& g = group();
  Generator gen(5);
  const int64_t n = 7;  // shares 4/3 or 3/2/2
  Tensor x = randn({n, 3, 4, 5}, {}, &gen), up = randn({n, 3, 4, 5}, {}, &gen);
  nn::BatchNorm2d ref(3), sync(3);
  {
    NoGradGuard ng;
    Tensor w = randn({3}, {}, &gen), bias = randn({3}, {}, &gen);
    ref.weight.copy_(w);
    ref.bias.copy_(bias);
    sync.weight.copy_(w);
    sync.bias.copy_(bias);
  }
  sync.statistics = std::make_shared<SyncBatchNormStatistics>(default_group_ptr());
  CHECK(sync.name() == "SyncBatchNorm");
  Tensor xr = x.clone();
  requires_grad_(xr);
  Tensor yr = ref(xr);
  backward(sum(yr * up));
  const auto [lo, hi] = share(n, g.size(), g.rank());
  Tensor xs = x.slice(0, lo, hi).contiguous();
  requires_grad_(xs);
  Tensor ys = sync(xs);
  backward(sum(ys * up.slice(0, lo, hi)));
  auto close = [](const Tensor& a, const Tensor& b, double tol) {
    const auto u = a.to_vector<double>(), v = b.to_vector<double>();
    REQUIRE(u.size() == v.size());
    double worst = 0;
    for (size_t i = 0; i < u.size(); ++i) worst = std::max(worst, std::fabs(u[i] - v[i]));
    CHECK(worst <= tol);
  };
  close(ys, detach(yr).slice(0, lo, hi), 1e-5);
  close(grad(xs), grad(xr).slice(0, lo, hi), 1e-5);
  // Parameter gradients: each rank holds its share's part; their sum is the whole.
  Tensor gw = grad(sync.weight).clone(), gb = grad(sync.bias).clone();
  g.all_reduce(gw)->wait();
  g.all_reduce(gb)->wait();
  close(gw, grad(ref.weight), 1e-4);
  close(gb, grad(ref.bias), 1e-4);
  // The running statistics saw the global batch, unbiased variance from the global count.
  close(sync.running_mean, ref.running_mean, 1e-6);
  close(sync.running_var, ref.running_var, 1e-6);
  // Eval uses the running statistics and needs no other rank.
  sync.eval();
  ref.eval();
  close(sync(xs), ref(x).slice(0, lo, hi), 1e-5);
}

TEST_CASE(
    "DDP buckets: reverse registration order, and the last layer's all-reduce starts before the "
    "first layer's gradient") {
  ProcessGroup& g = group();
  manual_seed(3);
  std::vector<nn::ModulePtr> layers;
  for (int i = 0; i < 6; ++i) {
    layers.push_back(std::make_shared<nn::Linear>(64, 64));
    layers.push_back(nn::ReLU());
  }
  auto model = std::make_shared<nn::Sequential>(layers);
  DdpOptions o;
  o.bucket_cap_mb = 16.0 * 1024 / (1 << 20);  // 16 KiB: each weight (16 KiB) closes a bucket
  DistributedDataParallel ddp(model, default_group_ptr(), o);
  const auto buckets = ddp.reducer().bucket_indices();
  std::vector<size_t> flat;
  for (const auto& b : buckets) flat.insert(flat.end(), b.begin(), b.end());
  std::vector<size_t> reverse(12);
  for (size_t i = 0; i < 12; ++i) reverse[i] = 11 - i;
  CHECK(flat == reverse);  // [bias 5, weight 5], [bias 4, weight 4], ...
  CHECK(buckets.size() == 6);
  backward(sum(ddp(randn({32, 64}))));
  const auto& tl = ddp.reducer().timeline();
  double first_launch = -1, first_layer_ready = -1, last_done = -1;
  int launches = 0;
  for (const auto& e : tl) {
    using K = Reducer::Event::Kind;
    if (e.kind == K::bucket_launched) {
      if (first_launch < 0) first_launch = e.ms;
      CHECK(e.index == static_cast<size_t>(launches));  // in bucket order
      ++launches;
    }
    if (e.kind == K::grad_ready && e.index == 0) first_layer_ready = e.ms;
    if (e.kind == K::bucket_done) last_done = e.ms;
  }
  std::printf(
      "rank %d: last layer's bucket launched at %.3f ms, first layer's gradient ready at "
      "%.3f ms, all buckets done at %.3f ms\n",
      g.rank(), first_launch, first_layer_ready, last_done);
  CHECK(launches == 6);
  CHECK(first_launch >= 0);
  CHECK(first_launch < first_layer_ready);
  CHECK(first_layer_ready <= last_done);
  // Every rank ends with the same (averaged) gradients.
  Tensor w = grad(model->parameters()[0]).clone();
  Tensor w0 = w.clone();
  g.broadcast(w0, 0)->wait();
  CHECK(ops::amax(ops::abs(ops::sub(w, w0))).item() == 0.0);
}

TEST_CASE(
    "DDP no_sync: gradients accumulate locally, and the next synchronised backward averages the "
    "sums") {
  ProcessGroup& g = group();
  manual_seed(8);
  nn::ModulePtr model = mlp();
  DistributedDataParallel ddp(model, default_group_ptr());
  auto batch = [&](int rank, int micro) {
    Generator gen(static_cast<uint64_t>(100 * rank + micro));
    return randn({4, 12}, {}, &gen);
  };
  {
    DistributedDataParallel::NoSync local(ddp.reducer());
    backward(sum(ddp(batch(g.rank(), 0))));
  }
  // Local only: this rank's gradient of its own micro-batch.
  const std::vector<Tensor> params = model->parameters();
  Tensor after_local = grad(params[0]).clone();
  backward(sum(ddp(batch(g.rank(), 1))));
  // Reference: a copy of the model (rank 0's weights) run on every rank's two micro-batches.
  manual_seed(8);
  nn::ModulePtr ref = mlp();
  ref->load_state_dict(model->state_dict());
  Tensor expected;
  {
    std::vector<Tensor> sums;
    for (int r = 0; r < g.size(); ++r) {
      ref->zero_grad();
      backward(sum((*ref)(batch(r, 0))));
      backward(sum((*ref)(batch(r, 1))));
      sums.push_back(grad(ref->parameters()[0]).clone());
      if (r == g.rank()) {
        // After the first micro-batch alone, this rank held exactly its own gradient.
        ref->zero_grad();
        backward(sum((*ref)(batch(r, 0))));
        CHECK(ops::amax(ops::abs(ops::sub(grad(ref->parameters()[0]), after_local))).item() < 1e-6);
      }
    }
    expected = sums[0];
    for (int r = 1; r < g.size(); ++r) expected = ops::add(expected, sums[r]);
    expected = ops::mul(expected, 1.0 / g.size());
  }
  CHECK(ops::amax(ops::abs(ops::sub(grad(params[0]), expected))).item() < 1e-5);
}

TEST_CASE("DDP refuses models that differ across ranks, naming the ranks, and unused parameters") {
  ProcessGroup& g = group();
  auto odd = std::make_shared<nn::Linear>(4, g.rank() == g.size() - 1 ? 5 : 6);
  try {
    DistributedDataParallel ddp(odd, default_group_ptr());
    FAIL("expected a ValueError");
  } catch (const ValueError& e) {
    const std::string m = e.what();
    CHECK(m.find("differ across ranks") != std::string::npos);
    CHECK(m.find("rank " + std::to_string(g.size() - 1) + ": 2 parameters, 25 elements") !=
          std::string::npos);
    CHECK(m.find("rank 0: 2 parameters, 30 elements") != std::string::npos);
  }
  // A parameter that never gets a gradient leaves the reduction unfinished: the next forward says
  // which.
  auto two = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Linear>(4, 4), std::make_shared<nn::Linear>(4, 4)});
  DistributedDataParallel ddp(two, default_group_ptr());
  Tensor x = randn({2, 4});
  backward(sum((*two)[1]->forward(x)));  // the first layer unused
  CHECK_THROWS_WITH_AS(ddp(x), doctest::Contains("0.weight, 0.bias"), ValueError);
}

TEST_CASE("DDP checkpoints: rank 0 writes, and a single process loads them") {
  ProcessGroup& g = group();
  const std::string path =
      (std::filesystem::temp_directory_path() / "ember_dist_ckpt.safetensors").string();
  manual_seed(static_cast<uint64_t>(g.rank()));  // different weights before DDP aligns them
  nn::ModulePtr model = mlp();
  DistributedDataParallel ddp(model, default_group_ptr());
  nn::SGD opt(model->parameters(), nn::SGDOptions{0.1, 0.9});
  backward(sum(ddp(randn({6, 12}))));
  opt.step();
  if (g.rank() == 0) nn::save_checkpoint(path, "mlp", *model, opt, 1);
  g.barrier()->wait();
  // Loaded without any process group, as a world size of 1 would.
  nn::ModulePtr single = mlp();
  nn::SGD single_opt(single->parameters(), nn::SGDOptions{0.1, 0.9});
  const nn::CheckpointInfo info = nn::load_checkpoint(path, "mlp", *single, single_opt);
  CHECK(info.epoch == 1);
  const auto a = model->parameters(), b = single->parameters();
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(ops::amax(ops::abs(ops::sub(a[i], b[i]))).item() == 0.0);
  g.barrier()->wait();
  if (g.rank() == 0) std::filesystem::remove(path);
}

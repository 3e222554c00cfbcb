// Convolution forward+backward on LeNet and ResNet-20 layer shapes, whole training steps of
// LeNet (digits-sized batches) and ResNet-20 (CIFAR-sized random batches, in float32 and under
// bfloat16 autocast), and forward+backward of LayerNorm, GroupNorm, ConvTranspose2d and bilinear
// interpolation on transformer- and decoder-sized shapes, timed on the CPU.
// Prints one JSON object {row: median milliseconds}; bench/compare_torch.py runs the same rows in
// PyTorch and prints both side by side.
//   bench_train_step [--threads N] [--repeats R] [--only ROW]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <ember.h>

#include "autograd/autocast.h"

using namespace ember;

namespace {

double median_ms(const std::function<void()>& fn, int repeats) {
  fn();  // warm-up (allocator, selection cache)
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// This process's peak resident set (VmHWM). Not getrusage's ru_maxrss: Linux carries that over
// exec from the process that started us (a Python parent running PyTorch, in compare_torch.py).
double peak_rss_mb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0.0;
  char line[256];
  double kb = 0.0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
  std::fclose(f);
  return kb / 1024.0;
}

struct ConvRow {
  const char* name;
  int64_t n, c, h, k, r, stride, pad;
};

// Forward, then backward w.r.t. input and weight, as a training step does.
std::function<void()> conv_fwd_bwd(const ConvRow& s) {
  Tensor x = randn({s.n, s.c, s.h, s.h});
  Tensor w = randn({s.k, s.c, s.r, s.r});
  requires_grad_(x);
  requires_grad_(w);
  return [x, w, s] {
    Tensor y = conv2d(x, w, Tensor(), Conv2dOptions().stride(s.stride).padding(s.pad));
    backward(sum(y));
  };
}

// Forward, then backward from a fixed output gradient, the leaves' gradients cleared first (as
// zero_grad(set_to_none=True) does): the op and its backward, no reduction around them.
std::function<void()> op_fwd_bwd(std::function<Tensor(const std::vector<Tensor>&)> op,
                                 std::vector<Shape> shapes, Shape out) {
  std::vector<Tensor> leaves;
  for (const Shape& s : shapes) {
    Tensor t = randn(s);
    requires_grad_(t);
    leaves.push_back(t);
  }
  const Tensor g = randn(out);
  return [op, leaves, g]() mutable {
    for (Tensor& t : leaves) zero_grad(t);
    backward(op(leaves), g);
  };
}

// `amp`: the forward and the loss under bfloat16 autocast on the cpu, as PyTorch users write it.
std::function<void()> train_step(nn::ModulePtr model, Tensor x, Tensor y, bool amp = false) {
  auto opt = std::make_shared<nn::SGD>(model->parameters(), nn::SGDOptions{0.01, 0.9});
  return [model, opt, x, y, amp] {
    Tensor loss;
    {
      AutocastGuard autocast(AutocastDevice::cpu, kBFloat16, amp);
      loss = cross_entropy((*model)(x), y);
    }
    opt->zero_grad();
    backward(loss);
    opt->step();
  };
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, repeats = 5;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--repeats R] [--only ROW]\n", argv[0]);
      return 2;
    }
  }
  if (threads > 0) omp_set_num_threads(threads);
  manual_seed(0);
  const ConvRow convs[] = {
      {"conv lenet8 1->16 8x8 k3", 32, 1, 8, 16, 3, 1, 1},
      {"conv lenet8 16->32 4x4 k3", 32, 16, 4, 32, 3, 1, 1},
      {"conv lenet5 1->6 28x28 k5", 64, 1, 28, 6, 5, 1, 2},
      {"conv lenet5 6->16 14x14 k5", 64, 6, 14, 16, 5, 1, 0},
      {"conv resnet20 16->16 32x32 k3", 128, 16, 32, 16, 3, 1, 1},
      {"conv resnet20 16->32 32x32 k3 s2", 128, 16, 32, 32, 3, 2, 1},
      {"conv resnet20 32->32 16x16 k3", 128, 32, 16, 32, 3, 1, 1},
      {"conv resnet20 64->64 8x8 k3", 128, 64, 8, 64, 3, 1, 1},
  };
  std::vector<std::pair<std::string, std::function<void()>>> rows;
  for (const ConvRow& c : convs) rows.emplace_back(c.name, conv_fwd_bwd(c));
  rows.emplace_back("step lenet8 digits b32",
                    train_step(nn::lenet({1, 8, 10}), rand({32, 1, 8, 8}),
                               from_vector<int64_t>(std::vector<int64_t>(32, 3))));
  rows.emplace_back("step resnet20 cifar b128",
                    train_step(nn::resnet20({3, 32, 10}), randn({128, 3, 32, 32}),
                               from_vector<int64_t>(std::vector<int64_t>(128, 7))));
  rows.emplace_back("step resnet20 cifar b128 bf16 autocast",
                    train_step(nn::resnet20({3, 32, 10}), randn({128, 3, 32, 32}),
                               from_vector<int64_t>(std::vector<int64_t>(128, 7)), true));
  using V = const std::vector<Tensor>&;
  rows.emplace_back("layer_norm [32,128,768]",
                    op_fwd_bwd([](V t) { return layer_norm(t[0], {768}, t[1], t[2]); },
                               {{32, 128, 768}, {768}, {768}}, {32, 128, 768}));
  rows.emplace_back("group_norm 32 groups [16,256,32,32]",
                    op_fwd_bwd([](V t) { return group_norm(t[0], 32, t[1], t[2]); },
                               {{16, 256, 32, 32}, {256}, {256}}, {16, 256, 32, 32}));
  rows.emplace_back("conv_transpose2d 64->32 k4 s2 [16,64,32,32]",
                    op_fwd_bwd(
                        [](V t) {
                          return conv_transpose2d(t[0], t[1], t[2],
                                                  ConvTranspose2dOptions().stride(2).padding(1));
                        },
                        {{16, 64, 32, 32}, {64, 32, 4, 4}, {32}}, {16, 32, 64, 64}));
  rows.emplace_back("interpolate bilinear x2 [16,64,64,64]",
                    op_fwd_bwd([](V t) { return interpolate(t[0], {}, {2.0}, "bilinear", false); },
                               {{16, 64, 64, 64}}, {16, 64, 128, 128}));
  std::printf("{");
  bool first = true;
  for (auto& [name, fn] : rows) {
    if (!only.empty() && name != only) continue;
    double ms = median_ms(fn, repeats);
    std::printf("%s\n  \"%s\": %.4f", first ? "" : ",", name.c_str(), ms);
    std::fflush(stdout);
    first = false;
  }
  std::printf("%s\n  \"max_rss_mb\": %.1f\n}\n", first ? "" : ",", peak_rss_mb());
  return 0;
}

// bench_dist: what data-parallel training costs. Under `mpirun -np N` (mpi backend) or an
// env:// launch (nccl backend): the all-reduce of a model's gradient buckets alone, a training
// step without DistributedDataParallel (the compute) and with it (compute + the communication
// it does not hide), and, on cuda, NCCL's all-reduce bandwidth over sizes. Each figure is the
// median of --reps runs, printed by rank 0. docs/benchmarks-cpu.md and docs/distributed.md keep
// the measured numbers.
//
//   mpirun -np 2 build/bin/bench_dist --model resnet20 --batch 64 --threads 1
//   RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 build/bin/bench_dist --backend nccl
//   --device cuda
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/functions.h"
#include "autograd/loss.h"
#include "dist/ddp.h"
#include "nn/models.h"
#include "nn/optim.h"
#include "ops/reduce.h"
#include "runtime/gpu.h"
#include "runtime/rng.h"

using namespace ember;

namespace {

struct Args {
  std::string backend = "mpi", model = "resnet20", profile;
  Device device = kCPU;
  int64_t batch = 64;
  double bucket_mb = 25.0;
  int reps = 10, threads = 0;
  int64_t image_size = 32;  // resnet20, resnet50
};

void sync(Device d) {
  if (d.is_gpu_like()) gpu::backend(d).device_synchronize(d.index);
}

// Median wall-clock milliseconds of `reps` runs of f after one untimed run; the ranks start each
// run together (a barrier), so the time is the slowest rank's as the others see it.
double median_ms(dist::ProcessGroup& g, Device d, int reps, const std::function<void()>& f) {
  f();
  sync(d);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    g.barrier()->wait();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    sync(d);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// One step's profile for bench/ddp_scaling.py: forward, backward and optimiser times, when
// each gradient was ready during the backward pass, and the buckets (JSON).
void write_profile(const Args& a, nn::Module& model, dist::DistributedDataParallel& ddp,
                   const Tensor& x, const Tensor& y, nn::SGD& opt) {
  const double t0 = ddp.reducer().now_ms();
  opt.zero_grad();
  Tensor loss = cross_entropy(ddp(x), y);
  sync(a.device);
  const double t1 = ddp.reducer().now_ms();
  backward(loss);
  sync(a.device);
  const double t2 = ddp.reducer().now_ms();
  opt.step();
  sync(a.device);
  const double t3 = ddp.reducer().now_ms();
  const std::vector<Tensor> params = model.parameters();
  std::vector<double> ready(params.size(), 0.0);
  for (const auto& e : ddp.reducer().timeline())
    if (e.kind == dist::Reducer::Event::Kind::grad_ready) ready[e.index] = e.ms - t1;
  FILE* f = std::fopen(a.profile.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + a.profile);
  std::fprintf(f, "{\"model\": \"%s\", \"batch\": %lld, \"device\": \"%s\", \"threads\": %d,\n",
               a.model.c_str(), static_cast<long long>(a.batch), a.device.str().c_str(),
               omp_get_max_threads());
  std::fprintf(f, " \"forward_ms\": %.4f, \"backward_ms\": %.4f, \"optimizer_ms\": %.4f,\n",
               t1 - t0, t2 - t1, t3 - t2);
  std::fprintf(f, " \"params\": [");
  for (size_t i = 0; i < params.size(); ++i)
    std::fprintf(f, "%s{\"bytes\": %lld, \"ready_ms\": %.4f}", i ? ", " : "",
                 static_cast<long long>(params[i].numel() * params[i].element_size()), ready[i]);
  std::fprintf(f, "],\n \"buckets\": [");
  const auto buckets = ddp.reducer().bucket_indices();
  for (size_t b = 0; b < buckets.size(); ++b) {
    std::fprintf(f, "%s[", b ? ", " : "");
    for (size_t k = 0; k < buckets[b].size(); ++k)
      std::fprintf(f, "%s%zu", k ? ", " : "", buckets[b][k]);
    std::fprintf(f, "]");
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
  std::printf("profile written to %s\n", a.profile.c_str());
}

int run(const Args& a) {
  if (a.threads > 0) omp_set_num_threads(a.threads);
  dist::InitOptions o;
  o.backend = a.backend;
  o.device = a.device;
  o.timeout = std::chrono::seconds(120);
  dist::ProcessGroupPtr g = dist::init_process_group(o);
  const bool main_rank = g->rank() == 0;
  const int w = g->size();
  auto say = [&](const char* fmt, auto... v) {
    if (main_rank) std::printf(fmt, v...);
  };
  say("bench_dist: %d rank(s), backend %s, device %s, %d threads per rank\n", w,
      g->backend().c_str(), a.device.str().c_str(), omp_get_max_threads());

  // --- The gradient buckets of the model alone ---------------------------------------------
  const nn::ModelSpec spec =
      a.model == "lenet" ? nn::ModelSpec{1, 8, 10} : nn::ModelSpec{3, a.image_size, 10};
  manual_seed(0);
  nn::ModulePtr model = nn::make_model(a.model, spec);
  model->to(a.device);
  dist::DdpOptions ddp_options;
  ddp_options.bucket_cap_mb = a.bucket_mb;
  auto ddp = std::make_shared<dist::DistributedDataParallel>(model, g, ddp_options);
  std::vector<Tensor> buckets;
  size_t total = 0;
  for (size_t bytes : ddp->reducer().bucket_bytes()) {
    buckets.push_back(zeros({static_cast<int64_t>(bytes / 4)}, {kFloat32, a.device}));
    total += bytes;
  }
  const double reduce_ms = median_ms(*g, a.device, a.reps, [&] {
    std::vector<dist::WorkPtr> works;
    for (const Tensor& b : buckets) works.push_back(g->all_reduce(b, dist::ReduceOp::avg));
    for (auto& wk : works) wk->wait();
  });
  const double algbw = static_cast<double>(total) / (reduce_ms * 1e-3) / 1e9;
  say("gradients: %s in %zu bucket(s) (cap %g MB); bucketed all-reduce: %.3f ms median, algbw "
      "%.2f GB/s, busbw %.2f GB/s\n",
      format_bytes(total).c_str(), buckets.size(), a.bucket_mb, reduce_ms, algbw,
      algbw * 2.0 * (w - 1) / w);

  // --- A training step without and with DDP, the same per-rank batch -------------------------
  Tensor x = randn({a.batch, spec.in_channels, spec.image_size, spec.image_size}).to(a.device);
  Tensor y = ops::argmax(rand({a.batch, 10}), 1).to(a.device);
  nn::SGD opt(model->parameters(), nn::SGDOptions{0.01, 0.9});
  auto step = [&](nn::Module& net) {
    opt.zero_grad();
    backward(cross_entropy(net(x), y));
    opt.step();
  };
  ddp->reducer().set_sync(false);  // no_sync: the hooks stay quiet, the compute alone
  const double plain_ms = median_ms(*g, a.device, a.reps, [&] { step(*model); });
  ddp->reducer().set_sync(true);
  const double ddp_ms = median_ms(*g, a.device, a.reps, [&] { step(*ddp); });
  say("step, per-rank batch %lld: without DDP %.2f ms, with DDP %.2f ms (%+.2f ms: what DDP "
      "adds, the communication not hidden behind the backward pass among it)\n",
      static_cast<long long>(a.batch), plain_ms, ddp_ms, ddp_ms - plain_ms);
  say("throughput: %.1f samples/s over %d rank(s)\n", 1000.0 * a.batch * w / ddp_ms, w);
  if (!a.profile.empty() && main_rank) write_profile(a, *model, *ddp, x, y, opt);

  // --- NCCL's all-reduce bandwidth over sizes (cuda) ---------------------------------------
  if (a.device.is_cuda()) {
    for (int64_t mib : {1, 4, 16, 64, 256}) {
      Tensor t = zeros({mib * 1024 * 256}, {kFloat32, a.device});
      const double ms = median_ms(*g, a.device, a.reps, [&] { g->all_reduce(t)->wait(); });
      const double bw = static_cast<double>(mib) * 1048576.0 / (ms * 1e-3) / 1e9;
      say("nccl all_reduce %4lld MiB: %.3f ms, algbw %.1f GB/s, busbw %.1f GB/s\n",
          static_cast<long long>(mib), ms, bw, bw * 2.0 * (w - 1) / w);
    }
  }
  say("bench_dist: done\n");
  ddp.reset();
  dist::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (k == "--backend")
      a.backend = v, ++i;
    else if (k == "--model")
      a.model = v, ++i;
    else if (k == "--device")
      a.device = Device::parse(v), ++i;
    else if (k == "--batch")
      a.batch = std::atoll(v), ++i;
    else if (k == "--bucket-mb")
      a.bucket_mb = std::atof(v), ++i;
    else if (k == "--reps")
      a.reps = std::max(1, std::atoi(v)), ++i;
    else if (k == "--threads")
      a.threads = std::atoi(v), ++i;
    else if (k == "--profile")
      a.profile = v, ++i;
    else if (k == "--image-size")
      a.image_size = std::atoll(v), ++i;
    else {
      std::fprintf(stderr,
                   "usage: bench_dist [--backend mpi|nccl] [--device cpu|cuda[:N]|emu] "
                   "[--model resnet20|resnet50|lenet] [--image-size N] [--batch N] "
                   "[--bucket-mb MB] [--reps N] [--threads N] [--profile FILE.json]\n");
      return 2;
    }
  }
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_dist: error: %s\n", e.what());
    return 1;
  }
}

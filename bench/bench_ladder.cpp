// The benchmark ladder: for GEMM, convolution, sum reduction and batch norm, every rung from the
// plainest kernel up, on one problem per op and in one table per op (README.md,
// "Benchmarks", explains the rungs):
//   1. version 1 (kernels/cuda/ladder_v1.cu): the textbook first kernel;
//   2. Ember's dispatched kernel(s) through the public ops: for convolution, every registered
//      algorithm that supports the problem, forced by name;
//   3. on cuda, the vendor library: cuBLAS (GEMM), cuDNN's fastest FMA algorithm (convolution).
// The float16 GEMM's rungs are the Tensor Core kernels (kernels/cuda/gemm_tc.cu): WMMA, then
// mma.sync with ldmatrix and a cp.async pipeline, then cuBLAS's cublasGemmStridedBatchedEx.
// Every rung's output is checked against a float64 reference computed here on the cpu (all
// outputs, or a fixed sample of them for the large GEMM and convolution); a rung outside the
// tolerance prints WRONG and the run exits 1. Each rung shows its rate (GFLOP/s, or GB/s of the
// op's least traffic), its fraction of the best rung and of the vendor rung. Timing: events
// around each call after two warm-up calls, median of --reps; on emu the events record host
// time, so emu rows check the path, they do not measure a GPU.
//
//   bench_ladder [--device cuda[:N]|emu[:N]] [--small] [--reps N]
//                [--op gemm,conv,reduce,bn,gemm16]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/validate.h"
#include "ember/build_config.h"
#include "kernels/cuda/ladder_v1.cuh"
#include "ladder.h"
#include "ops/batch_norm.h"
#include "ops/conv2d.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "reference/conv_spec.h"
#if EMBER_BENCH_CUDNN
#include "reference/cudnn_conv.h"
#endif
#include "runtime/gpu.h"
#include "runtime/rng.h"
#include "runtime/tensor.h"

namespace {

using namespace ember;
using bench::ConvSpec;
using bench::Ladder;
using bench::sample_positions;

struct Options {
  Device device{DeviceType::CUDA, 0};
  bool small = false;
  int reps = 10;
  // gemm16 last, its wgmma rung after cuBLAS's: a kernel never run on a GPU before goes last, so
  // a fault in it leaves the other rows measured (Note [wgmma in a process of its own]).
  std::vector<std::string> ops{"gemm", "conv", "reduce", "bn", "gemm16"};
};

// The plain rungs' launchers of the tensor's device type (cuda only in builds with nvcc).
struct V1 {
  decltype(&kernels::emu::gemm_v1) gemm, gemm_v2, gemm_tiled;
  decltype(&kernels::emu::conv2d_fwd_v1) conv2d_fwd;
  decltype(&kernels::emu::reduce_sum_v1_workspace_floats) reduce_workspace;
  decltype(&kernels::emu::reduce_sum_v1) reduce_sum;
  decltype(&kernels::emu::batch_norm_fwd_v1) batch_norm_fwd;
};
V1 v1_for(Device d) {
#if EMBER_HAVE_CUDA
  if (d.is_cuda())
    return {kernels::cuda::gemm_v1,
            kernels::cuda::gemm_v2,
            kernels::cuda::gemm_tiled_f32,
            kernels::cuda::conv2d_fwd_v1,
            kernels::cuda::reduce_sum_v1_workspace_floats,
            kernels::cuda::reduce_sum_v1,
            kernels::cuda::batch_norm_fwd_v1};
#endif
  (void)d;
  return {kernels::emu::gemm_v1,
          kernels::emu::gemm_v2,
          kernels::emu::gemm_tiled_f32,
          kernels::emu::conv2d_fwd_v1,
          kernels::emu::reduce_sum_v1_workspace_floats,
          kernels::emu::reduce_sum_v1,
          kernels::emu::batch_norm_fwd_v1};
}

float* f32(const Tensor& t) {
  return static_cast<float*>(t.data_ptr());
}

class Bench {
 public:
  explicit Bench(Options o)
      : o_(std::move(o)), cuda_(o_.device.is_cuda()), v1_(v1_for(o_.device)) {}

  int run() {
    bool ok = true;
    for (const std::string& op : o_.ops) {
      if (op == "gemm") ok = gemm() && ok;
      if (op == "gemm16") ok = gemm_half() && ok;
      if (op == "conv") ok = conv() && ok;
      if (op == "reduce") ok = reduce() && ok;
      if (op == "bn") ok = batch_norm() && ok;
    }
    std::printf("\nbench_ladder: done%s\n", ok ? "" : " (WRONG results above)");
    return ok ? 0 : 1;
  }

 private:
  Tensor randn_on(const Shape& s) { return randn(s, {kFloat32, o_.device}, &gen_); }
  gpu::Stream stream() const { return gpu::current_stream(o_.device); }

  // The error of a product C = A B ([m, k] x [k, n], row-major) at `samples` sampled entries:
  // the worst |c - ref| / sum_p |a_ip b_pj|, against float64 sums of A's and B's values.
  static std::function<double(const std::vector<float>&)> gemm_error(const Tensor& a,
                                                                     const Tensor& b,
                                                                     int64_t samples) {
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    const std::vector<float> ha = a.to_vector<float>(), hb = b.to_vector<float>();
    const std::vector<int64_t> at = sample_positions(m * n, samples);
    std::vector<double> ref(at.size()), mag(at.size());
    for (size_t e = 0; e < at.size(); ++e) {
      const int64_t i = at[e] / n, j = at[e] % n;
      for (int64_t p = 0; p < k; ++p) {
        const double t = double(ha[i * k + p]) * double(hb[p * n + j]);
        ref[e] += t;
        mag[e] += std::fabs(t);
      }
    }
    return [at, ref, mag](const std::vector<float>& c) {
      double worst = 0;
      for (size_t e = 0; e < at.size(); ++e)
        worst = std::max(worst, std::fabs(c[at[e]] - ref[e]) / std::max(mag[e], 1e-30));
      return worst;
    };
  }

  // C = A B, [m, k] x [k, n]. Error at each checked entry: |c - ref| / sum_p |a_ip b_pj|.
  bool gemm() {
    const int64_t m = o_.small ? 61 : 4096, n = o_.small ? 67 : 4096, k = o_.small ? 53 : 4096;
    const Tensor a = randn_on({m, k}), b = randn_on({k, n});
    const auto error = gemm_error(a, b, 4096);
    Ladder l("gemm fp32 " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                 " on " + o_.device.str(),
             "GFLOP/s", 2.0 * m * n * k, 1e-5, error);
    Tensor c = empty({m, n}, {kFloat32, o_.device});
    l.rung(o_.device, o_.reps, "v1: one thread per output", false, &c,
           [&] { v1_.gemm(m, n, k, f32(a), f32(b), f32(c), stream()); });
    l.rung(o_.device, o_.reps, "v2: 16x16 shared-memory tiles", false, &c,
           [&] { v1_.gemm_v2(m, n, k, f32(a), f32(b), f32(c), stream()); });
    l.rung(o_.device, o_.reps, "v3: 64x64 tiles, 4x4 registers/thread", false, &c,
           [&] { v1_.gemm_tiled(m, n, k, f32(a), f32(b), f32(c), stream()); });
    Tensor out;
    const auto matmul_rung = [&](const std::string& name, ops::GpuGemm g, bool vendor) {
      ops::set_gpu_gemm(g);
      l.rung(o_.device, o_.reps, name, vendor, &out, [&] { out = ops::matmul(a, b); });
      ops::set_gpu_gemm(ops::GpuGemm::automatic);
    };
    matmul_rung("v4 ember: + float4 loads, double buffer", ops::GpuGemm::ember, false);
    if (cuda_ && ops::gpu_gemm_has_cublas())
      matmul_rung("cuBLAS SGEMM (ops::matmul, no TF32)", ops::GpuGemm::cublas, true);
    else
      l.skip("cuBLAS SGEMM", true, cuda_ ? "built without cuBLAS" : "cuda only");
    return l.print();
  }

  // C = A B in float16 (float32 accumulation), [m, k] x [k, n] at 8192^3 (H200's cuBLAS: about
  // 790 TFLOP/s). Error as gemm()'s, against the float64 product of the float16 inputs.
  bool gemm_half() {
    const int64_t m = o_.small ? 61 : 8192, n = o_.small ? 67 : 8192, k = o_.small ? 53 : 8192;
    const Tensor a = randn_on({m, k}).to(kFloat16), b = randn_on({k, n}).to(kFloat16);
    const auto error = gemm_error(a, b, 1024);
    // float16's rounding of the result (2^-11 of |c| <= the magnitude) and float32 sums.
    Ladder l("gemm fp16 (fp32 accumulate) " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                 std::to_string(k) + " on " + o_.device.str(),
             "GFLOP/s", 2.0 * m * n * k, 1e-3, error);
    Tensor out;
    const auto tc_rung = [&](const std::string& name, kernels::TcKernel kernel) {
      ops::set_gpu_gemm(ops::GpuGemm::ember);
      ops::set_tc_gemm(kernel);
      l.rung(o_.device, o_.reps, name, false, &out, [&] { out = ops::matmul(a, b); });
      ops::set_tc_gemm(kernels::TcKernel::automatic);
      ops::set_gpu_gemm(ops::GpuGemm::automatic);
    };
    tc_rung("wmma: 64x64 tiles, plain loads", kernels::TcKernel::wmma);
    tc_rung("mma.sync + ldmatrix + cp.async x3", kernels::TcKernel::mma_sync);
    if (cuda_ && ops::gpu_gemm_has_cublas()) {
      ops::set_gpu_gemm(ops::GpuGemm::cublas);
      l.rung(o_.device, o_.reps, "cuBLAS GemmEx (CUBLAS_COMPUTE_32F)", true, &out,
             [&] { out = ops::matmul(a, b); });
      ops::set_gpu_gemm(ops::GpuGemm::automatic);
    } else {
      l.skip("cuBLAS GemmEx", true, cuda_ ? "built without cuBLAS" : "cuda only");
    }
    // sm_90a code: on other devices the rung shows the plan's reason instead of a rate.
    tc_rung("wgmma m64n128k16 + cp.async x3", kernels::TcKernel::wgmma);
    return l.print();
  }

  // y = conv(x, w), no bias. Error at each checked output: |y - ref| / sum |x w| over its taps.
  bool conv() {
    const ConvSpec s =
        o_.small ? ConvSpec{2, 8, 9, 9, 16, 3, 3, 2, 1} : ConvSpec{32, 64, 56, 56, 64, 3, 3, 1, 1};
    const kernels::ConvShape cs = s.shape();
    const Tensor x = randn_on({s.n, s.c, s.h, s.w}), w = randn_on({s.k, s.c, s.r, s.s});
    const bench::ConvSampleReference check(s, x.to_vector<float>(), w.to_vector<float>(),
                                           sample_positions(cs.y_numel(), 4096));
    auto error = [&](const std::vector<float>& y) { return check.error(y); };
    const std::string title = "conv2d fwd fp32 " + s.str() + " on " + o_.device.str();
    Ladder l(title, "GFLOP/s", s.flops(), 1e-5, error);
    Tensor y = empty({s.n, s.k, cs.oh, cs.ow}, {kFloat32, o_.device});
    l.rung(o_.device, o_.reps, "v1: one thread per output", false, &y,
           [&] { v1_.conv2d_fwd(cs, f32(x), f32(w), f32(y), stream()); });

    ops::Conv2dParams p;
    p.stride = {s.stride, s.stride};
    p.padding = {s.pad, s.pad};
    const ops::ConvKey key =
        ops::conv2d_key(ops::ConvDirection::forward, x.shape(), w.shape(), kFloat32, o_.device, p);
    Tensor out;
    for (const ops::ConvCandidate& cand : ops::explain_conv_algos(key).candidates) {
      if (!cand.supported) continue;  // another device's algorithm, or not this shape
      const std::string name = "ember: " + cand.name + " (ops::conv2d)";
      ops::set_conv_algo(cand.name);
      l.rung(o_.device, o_.reps, name, false, &out, [&] { out = ops::conv2d(x, w, Tensor(), p); });
      ops::set_conv_algo("");
    }
    vendor_conv(l, s, x, w, y);
    return l.print();
  }

  void vendor_conv(Ladder& l, const ConvSpec& s, const Tensor& x, const Tensor& w, Tensor& y) {
#if EMBER_BENCH_CUDNN
    if (cuda_) {
      try {
        auto ref = std::make_shared<bench::CudnnConv>(s, o_.device.index, f32(x), f32(w), f32(y),
                                                      size_t{1} << 30);
        l.rung(o_.device, o_.reps, "cuDNN " + ref->algo_name() + " (FMA)", true, &y,
               [&] { ref->run(f32(x), f32(w), f32(y)); });
      } catch (const std::exception& e) {
        l.skip("cuDNN", true, e.what());
      }
      return;
    }
#endif
    (void)s, (void)x, (void)w, (void)y;
    l.skip("cuDNN", true, cuda_ ? "built without cuDNN" : "cuda only");
  }

  // The sum of n floats. Error: |sum - ref| / sum |x|.
  bool reduce() {
    const int64_t n = o_.small ? 100003 : (int64_t{1} << 26);
    const Tensor x = randn_on({n});
    double ref = 0, mag = 0;
    for (float v : x.to_vector<float>()) ref += v, mag += std::fabs(v);
    auto error = [&](const std::vector<float>& s) { return std::fabs(s.at(0) - ref) / mag; };
    Ladder l("sum fp32 of " + std::to_string(n) + " values on " + o_.device.str(), "GB/s", 4.0 * n,
             1e-5, error);
    const Tensor sum = empty({1}, {kFloat32, o_.device});
    const Tensor ws = empty({static_cast<int64_t>(v1_.reduce_workspace(n))}, {kFloat32, o_.device});
    l.rung(o_.device, o_.reps, "v1: shared-memory tree, launch per level", false, &sum,
           [&] { v1_.reduce_sum(n, f32(x), f32(sum), f32(ws), stream()); });
    Tensor out;
    l.rung(o_.device, o_.reps, "ember: reduce kernel (ops::sum)", false, &out,
           [&] { out = ops::sum(x); });
    return l.print();
  }

  // Training-mode forward, batch statistics, no running stats. Error: max |y - ref| / max |ref|.
  bool batch_norm() {
    const Shape shape = o_.small ? Shape{3, 5, 7, 9} : Shape{32, 128, 64, 64};
    const int64_t nb = shape[0], c = shape[1], sp = shape[2] * shape[3];
    const double eps = 1e-5;
    const Tensor x = randn_on(shape), w = randn_on({c}), b = randn_on({c});
    const std::vector<float> hx = x.to_vector<float>(), hw = w.to_vector<float>(),
                             hb = b.to_vector<float>();
    std::vector<double> ref(hx.size());
    double scale = 0;
    for (int64_t ch = 0; ch < c; ++ch) {
      double sum = 0, sq = 0;
      const auto at = [&](int64_t i) { return (i / sp * c + ch) * sp + i % sp; };
      for (int64_t i = 0; i < nb * sp; ++i) sum += hx[at(i)];
      const double mean = sum / double(nb * sp);
      for (int64_t i = 0; i < nb * sp; ++i) sq += (hx[at(i)] - mean) * (hx[at(i)] - mean);
      const double invstd = 1.0 / std::sqrt(sq / double(nb * sp) + eps);
      for (int64_t i = 0; i < nb * sp; ++i) {
        ref[at(i)] = (hx[at(i)] - mean) * invstd * hw[ch] + hb[ch];
        scale = std::max(scale, std::fabs(ref[at(i)]));
      }
    }
    auto error = [&](const std::vector<float>& y) {
      double worst = 0;
      for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref[i]));
      return worst / scale;
    };
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
    // The least traffic: x read for the statistics, read again and y written.
    Ladder l("batch_norm fwd train fp32 " + dims + " on " + o_.device.str(), "GB/s",
             3.0 * 4.0 * static_cast<double>(hx.size()), 1e-4, error);
    const Tensor y = empty(shape, {kFloat32, o_.device});
    const kernels::BatchNormShape s{nb, c, sp};
    l.rung(o_.device, o_.reps, "v1: one block per channel, three passes", false, &y,
           [&] { v1_.batch_norm_fwd(s, eps, f32(x), f32(w), f32(b), f32(y), stream()); });
    Tensor out;
    l.rung(o_.device, o_.reps, "ember: split channels (ops::batch_norm)", false, &out,
           [&] { out = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, eps).out; });
    return l.print();
  }

  Options o_;
  bool cuda_;
  V1 v1_;
  Generator gen_{1234};
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(
      "The benchmark ladder: for each op, version 1 (kernels/cuda/ladder_v1.cu), Ember's "
      "dispatched kernels and, on cuda, cuBLAS/cuDNN; each rung checked against a float64 cpu "
      "reference (WRONG and exit 1 outside the tolerance) and timed. README.md, section "
      "Benchmarks, explains the rungs.",
      "bench_ladder");
  Options o;
  std::string device = "cuda";
  app.add_option("--device", device, "cuda[:N] or emu[:N] (emu needs --small)")
      ->capture_default_str()
      ->check(cli::device_of({DeviceType::CUDA, DeviceType::EMU}));
  app.add_flag("--small", o.small, "small problems (seconds on the emulator)");
  app.add_option("--reps", o.reps, "timed runs per rung (the median is shown)")
      ->capture_default_str()
      ->transform(cli::integer_in(1, 10000));
  app.add_option("--op", o.ops, "ops to run, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember({"gemm", "gemm16", "conv", "reduce", "bn"}));
  CLI11_PARSE(app, argc, argv);
  o.device = Device::parse(device);
  if (o.device.is_emu() && !o.small) {
    std::fprintf(stderr,
                 "--device: emu runs the full problems for hours; add --small (emu timings are "
                 "host time, not GPU time)\n");
    return 2;
  }
  try {
    gpu::require_device(o.device);
  } catch (const std::exception& e) {
    std::printf("bench_ladder: %s unusable: %s\n", o.device.str().c_str(), e.what());
    return 1;
  }
  std::printf("bench_ladder on %s (%s), median of %d timed runs per rung%s\n",
              o.device.str().c_str(),
              gpu::backend(o.device).properties(o.device.index).name.c_str(), o.reps,
              o.device.is_emu() ? "; emu times are host time, not GPU time" : "");
  return Bench(o).run();
}

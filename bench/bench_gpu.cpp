// The GPU benchmarks: Ember's kernels through the ops API on `cuda` (or, with --small, on the
// emulator), each next to its ceiling or peer in the same run, as one table:
//   sgemm        ops::matmul fp32 4096^3 on Ember's GEMM   vs cuBLAS SGEMM (no TF32)   >= 0.7x
//   copy         device-to-device memcpy, 256 MiB            the bandwidth ceiling
//   add, relu, batch_norm (training forward), max_pool2d 3x3/2
//                achieved bandwidth on >= 64 MiB tensors     vs the copy's               >= 0.7
//                (relu and batch_norm once on Ember's kernel and once on cuDNN's, where it serves)
//   conv ...     conv2d forward, algorithm implicit_gemm     vs cuDNN's fastest (FMA)    >= 0.5x
//   f2x2/f4x4 ...  winograd_f2x2_3x3 / _f4x4_3x3 / _f2x2_3x3_fused forward
//                                                            vs cuDNN's fastest Winograd >= 0.6x
//   fft ...      conv2d forward, algorithm fft (R >= 7)      vs cuDNN's fastest FFT       -
// A row whose op throws (not on this device yet, say) reads "n/a: <message>". Every result is
// also checked: against cuBLAS/cuDNN on cuda, against the cpu ops with --small. Timing: events
// around each call, after warm-up, median of the runs; on emu the events record host time, so
// emu rows are a regression guard for the emulated path, not a speed measure.
// Exit status: 1 when a result is wrong or the device is unusable; missed targets only show in
// the table (timed assertions do not belong in tests).
//
//   bench_gpu [--device cuda|emu] [--small] [--reps N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ember/build_config.h"
#include "ops/activation.h"
#include "ops/batch_norm.h"
#include "ops/conv2d.h"
#include "ops/conv2d_cudnn.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/pool2d.h"
#include "ops/reduce.h"
#include "reference/conv_spec.h"
#include "reference/cudnn_conv.h"  // the class is defined only where cuDNN is (EMBER_BENCH_CUDNN)
#include "runtime/gpu.h"
#include "runtime/rng.h"
#include "runtime/tensor.h"
#include "timing.h"

namespace {

using namespace ember;
using bench::ConvSpec;
using bench::time_ms;

struct Options {
  Device device{DeviceType::CUDA, 0};
  bool small = false;
  int reps = 10;
};

struct Row {
  std::string name, ours, ref;
  double ratio = NAN, target = NAN;
  std::string verdict;
};

std::string fmt(const char* f, double a, double b = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

// max |got - want| / max |want|, on want's device.
double rel_err(const Tensor& got, const Tensor& want) {
  const Tensor g = got.to(want.device(), want.dtype());
  const double scale = ops::amax(ops::abs(want)).item();
  return ops::amax(ops::abs(ops::sub(g, want))).item() / (scale > 0 ? scale : 1.0);
}

std::string first_line(const std::string& s) {
  const std::string line = s.substr(0, s.find('\n'));
  return line.size() > 64 ? line.substr(0, 61) + "..." : line;
}

std::string bytes_str(double bytes) {
  return bytes >= 1 << 20 ? fmt("%.0f MiB", bytes / (1 << 20)) : fmt("%.0f KiB", bytes / 1024);
}

class Bench {
 public:
  explicit Bench(Options o) : o_(o), cuda_(o.device.is_cuda()) {}

  int run() {
    sgemm();
    copy();
    elementwise_rows();
    conv_rows();
    print();
    return wrong_ ? 1 : 0;
  }

 private:
  Tensor randn_on(const Shape& s) { return randn(s, {kFloat32, o_.device}, &gen_); }

  // Adds a row for one timed op; `body` fills ours/ref/ratio and may throw (the row becomes n/a).
  void row(const std::string& name, double target, const std::function<void(Row&)>& body) {
    Row r;
    r.name = name;
    r.target = target;
    try {
      body(r);
      if (r.verdict.empty()) {
        if (!cuda_)
          r.verdict = "ran";
        else if (std::isnan(r.target) || std::isnan(r.ratio))
          r.verdict = "-";
        else
          r.verdict = r.ratio >= r.target ? "pass" : "FAIL";
      }
    } catch (const std::exception& e) {
      r.ours = "n/a: " + first_line(e.what());
      r.verdict = "n/a";
    }
    rows_.push_back(r);
    std::printf("%-34s %s | %s\n", r.name.c_str(), r.ours.c_str(), r.ref.c_str());
    std::fflush(stdout);
  }

  // A wrong result marks the row and the run.
  void check(Row& r, double err, double tol) {
    if (err <= tol) return;
    r.verdict = "WRONG";
    r.ref += fmt(" [rel err %.2g]", err);
    wrong_ = true;
  }

  void sgemm() {
    const int64_t n = o_.small ? 64 : 4096;
    row("sgemm fp32 " + std::to_string(n) + "^3", 0.7, [&](Row& r) {
      const Tensor a = randn_on({n, n}), b = randn_on({n, n});
      const double flops = 2.0 * n * n * n;
      ops::set_gpu_gemm(ops::GpuGemm::ember);
      const Tensor ours = ops::matmul(a, b);
      const double ms = time_ms(o_.device, o_.reps, [&] { (void)ops::matmul(a, b); });
      r.ours = fmt("%.2f TFLOP/s (%.3f ms)", flops / ms * 1e-9, ms);
      ops::set_gpu_gemm(ops::GpuGemm::automatic);
      if (cuda_ && ops::gpu_gemm_has_cublas()) {
        ops::set_gpu_gemm(ops::GpuGemm::cublas);
        const Tensor want = ops::matmul(a, b);
        const double ref = time_ms(o_.device, o_.reps, [&] { (void)ops::matmul(a, b); });
        ops::set_gpu_gemm(ops::GpuGemm::automatic);
        r.ref = fmt("cuBLAS %.2f TFLOP/s (%.3f ms)", flops / ref * 1e-9, ref);
        r.ratio = ref / ms;
        check(r, rel_err(ours, want), 1e-4);
      } else {
        r.ref = cuda_ ? "n/a: built without cuBLAS" : "-";
        if (!cuda_) check(r, rel_err(ours, ops::matmul(a.cpu(), b.cpu())), 1e-4);
      }
    });
  }

  void copy() {
    const int64_t bytes = o_.small ? (int64_t{1} << 20) : (int64_t{256} << 20);
    row("copy d2d " + bytes_str(static_cast<double>(bytes)), NAN, [&](Row& r) {
      const Tensor src = empty({bytes}, {kUInt8, o_.device}),
                   dst = empty({bytes}, {kUInt8, o_.device});
      gpu::Backend& be = gpu::backend(o_.device);
      const double ms = time_ms(o_.device, o_.reps, [&] {
        be.memcpy_async(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(bytes),
                        gpu::CopyKind::DeviceToDevice, nullptr);
      });
      copy_gbs_ = 2.0 * bytes / ms * 1e-6;  // read + written
      r.ours = fmt("%.0f GB/s (%.3f ms)", copy_gbs_, ms);
      r.ref = "the ceiling (bytes read + written)";
      r.verdict = "-";
    });
  }

  // One bandwidth row: `bytes` moved per call of f.
  void bandwidth(Row& r, double bytes, const std::function<void()>& f) {
    const double ms = time_ms(o_.device, o_.reps, f);
    const double gbs = bytes / ms * 1e-6;
    r.ours = fmt("%.0f GB/s (%.3f ms)", gbs, ms);
    if (copy_gbs_ > 0) {
      r.ref = fmt("copy %.0f GB/s", copy_gbs_);
      if (cuda_) r.ratio = gbs / copy_gbs_;  // emulated time says nothing about bandwidth
    } else {
      r.ref = "-";
    }
  }

  // A backend an op's rows run under: its preference and the rows' name suffix.
  struct Backend {
    ops::BackendPreference preference;
    const char* suffix;
  };
  // Ember's kernels, and cuDNN's where it can serve (on cuda, cuDNN usable and on).
  std::vector<Backend> backends() const {
    std::vector<Backend> out{{ops::BackendPreference::prefer_ember, " (Ember)"}};
    if (cuda_ && ops::cudnn_unusable_reason().empty() && ops::cudnn_enabled())
      out.push_back({ops::BackendPreference::prefer_cudnn, " (cuDNN)"});
    return out;
  }
  // Sets an op's backend preference for a scope.
  class Preference {
   public:
    Preference(ops::CudnnOp op, ops::BackendPreference p)
        : op_(op), saved_(ops::backend_preference(op)) {
      ops::set_backend_preference(op, p);
    }
    ~Preference() { ops::set_backend_preference(op_, saved_); }
    Preference(const Preference&) = delete;
    Preference& operator=(const Preference&) = delete;

   private:
    ops::CudnnOp op_;
    ops::BackendPreference saved_;
  };

  void elementwise_rows() {
    // 16 Mi floats = 64 MiB per tensor; [32, 128, 64, 64] = 64 MiB for the NCHW ops.
    const int64_t n = o_.small ? (int64_t{1} << 16) : (int64_t{1} << 24);
    const Shape img = o_.small ? Shape{4, 8, 16, 16} : Shape{32, 128, 64, 64};
    const double f = sizeof(float);
    const double img_bytes = static_cast<double>(checked_numel(img)) * f;
    row("add " + bytes_str(n * f), 0.7, [&](Row& r) {
      const Tensor a = randn_on({n}), b = randn_on({n});
      const Tensor got = ops::add(a, b);
      bandwidth(r, 3.0 * n * f, [&] { (void)ops::add(a, b); });
      check(r, rel_err(got.cpu(), ops::add(a.cpu(), b.cpu())), 1e-6);
    });
    // relu and batch norm once on each backend that may run them on cuda (cuDNN's where it
    // serves, Ember's kernel always), so that the table says which is faster, and by how much.
    for (const Backend& be : backends()) {
      const Preference pref(ops::CudnnOp::activation, be.preference);
      row("relu " + bytes_str(n * f) + be.suffix, 0.7, [&](Row& r) {
        const Tensor a = randn_on({n});
        const Tensor got = ops::relu(a);
        bandwidth(r, 2.0 * n * f, [&] { (void)ops::relu(a); });
        check(r, rel_err(got.cpu(), ops::relu(a.cpu())), 0);
      });
    }
    // Two passes at the least: x read for the statistics, read again and y written.
    for (const Backend& be : backends()) {
      const Preference pref(ops::CudnnOp::batch_norm, be.preference);
      row("batch_norm fwd train " + shape_str(img) + be.suffix, 0.7, [&](Row& r) {
        const Tensor x = randn_on(img), w = randn_on({img[1]}), b = randn_on({img[1]});
        const auto bn = [&](const Tensor& xx, const Tensor& ww, const Tensor& bb) {
          return ops::batch_norm(xx, ww, bb, Tensor(), Tensor(), true, 0.1, 1e-5).out;
        };
        const Tensor got = bn(x, w, b);
        bandwidth(r, 3.0 * img_bytes, [&] { (void)bn(x, w, b); });
        check(r, rel_err(got.cpu(), bn(x.cpu(), w.cpu(), b.cpu())), 1e-4);
      });
    }
    // Input read once; output and its int64 indices written.
    row("max_pool2d 3x3/2 " + shape_str(img), 0.7, [&](Row& r) {
      ops::MaxPool2dParams p;
      p.kernel = {3, 3};
      p.stride = {2, 2};
      p.padding = {1, 1};
      const Tensor x = randn_on(img);
      const auto [got, idx] = ops::max_pool2d(x, p);
      const double out = static_cast<double>(got.numel());
      bandwidth(r, img_bytes + out * (f + 8), [&] { (void)ops::max_pool2d(x, p); });
      check(r, rel_err(got.cpu(), ops::max_pool2d(x.cpu(), p).first), 0);
    });
  }

  // One row of a conv2d forward through `algo`, forced by name, next to cuDNN's fastest of
  // `family`.
  struct ConvRow {
    std::string name;
    const char* algo;
    ConvSpec spec;
    bench::CudnnFamily family;
    double target;
  };

  void conv_rows() {
    using F = bench::CudnnFamily;
    const char *ig = "implicit_gemm", *f2 = "winograd_f2x2_3x3", *f4 = "winograd_f4x4_3x3";
    const char* f2f = "winograd_f2x2_3x3_fused";
    std::vector<ConvRow> rows;
    if (o_.small) {
      rows = {{"conv 3x3 8@8x8 N2", ig, {2, 8, 8, 8, 8, 3, 3, 1, 1}, F::any, 0.5},
              {"conv 3x3/2 8->16@8x8 N2", ig, {2, 8, 8, 8, 16, 3, 3, 2, 1}, F::any, 0.5},
              {"conv 1x1 8->16@8x8 N2", ig, {2, 8, 8, 8, 16, 1, 1, 1, 0}, F::any, 0.5},
              {"f2x2 3x3 8@9x9 N2", f2, {2, 8, 9, 9, 8, 3, 3, 1, 1}, F::winograd, 0.6},
              {"f4x4 3x3 8@9x9 N2", f4, {2, 8, 9, 9, 8, 3, 3, 1, 1}, F::winograd, 0.6},
              {"f2x2 fused 3x3 20@9x9 N2", f2f, {2, 20, 9, 9, 20, 3, 3, 1, 1}, F::winograd, 0.6},
              {"fft 7x7 4@12x12 N1", "fft", {1, 4, 12, 12, 4, 7, 7, 1, 3}, F::fft, NAN}};
    } else {
      rows = {
          {"resnet20 3x3 16@32x32 N128", ig, {128, 16, 32, 32, 16, 3, 3, 1, 1}, F::any, 0.5},
          {"resnet20 3x3 32@16x16 N128", ig, {128, 32, 16, 16, 32, 3, 3, 1, 1}, F::any, 0.5},
          {"resnet20 3x3 64@8x8 N128", ig, {128, 64, 8, 8, 64, 3, 3, 1, 1}, F::any, 0.5},
          {"resnet20 3x3/2 16->32@32x32 N128", ig, {128, 16, 32, 32, 32, 3, 3, 2, 1}, F::any, 0.5},
          {"resnet50 3x3 64@56x56 N32", ig, {32, 64, 56, 56, 64, 3, 3, 1, 1}, F::any, 0.5},
          {"resnet50 3x3 128@28x28 N32", ig, {32, 128, 28, 28, 128, 3, 3, 1, 1}, F::any, 0.5},
          {"resnet50 3x3 256@14x14 N32", ig, {32, 256, 14, 14, 256, 3, 3, 1, 1}, F::any, 0.5},
          {"resnet50 3x3 512@7x7 N32", ig, {32, 512, 7, 7, 512, 3, 3, 1, 1}, F::any, 0.5},
          {"resnet50 1x1 64->256@56x56 N32", ig, {32, 64, 56, 56, 256, 1, 1, 1, 0}, F::any, 0.5},
          {"f2x2 resnet50 64@56x56 N32", f2, {32, 64, 56, 56, 64, 3, 3, 1, 1}, F::winograd, 0.6},
          {"f4x4 resnet50 64@56x56 N32", f4, {32, 64, 56, 56, 64, 3, 3, 1, 1}, F::winograd, 0.6},
          {"f2x2 fused resnet50 64@56x56", f2f, {32, 64, 56, 56, 64, 3, 3, 1, 1}, F::winograd, .6},
          {"f2x2 resnet50 256@14x14 N32", f2, {32, 256, 14, 14, 256, 3, 3, 1, 1}, F::winograd, 0.6},
          {"f4x4 resnet50 256@14x14 N32", f4, {32, 256, 14, 14, 256, 3, 3, 1, 1}, F::winograd, 0.6},
          {"f2x2 vgg16 128@112x112 N32", f2, {32, 128, 112, 112, 128, 3, 3, 1, 1}, F::winograd, .6},
          {"f4x4 vgg16 128@112x112 N32", f4, {32, 128, 112, 112, 128, 3, 3, 1, 1}, F::winograd, .6},
          {"f2x2 fused vgg16 128@112x112",
           f2f,
           {32, 128, 112, 112, 128, 3, 3, 1, 1},
           F::winograd,
           .6},
          {"fft 9x9 32@64x64 N32", "fft", {32, 32, 64, 64, 32, 9, 9, 1, 4}, F::fft, NAN},
          {"fft 13x13 16@64x64 N32", "fft", {32, 16, 64, 64, 16, 13, 13, 1, 6}, F::fft, NAN}};
    }
    for (const ConvRow& c : rows) {
      const ConvSpec& s = c.spec;
      row(c.name, c.target, [&](Row& r) {
        const Tensor x = randn_on({s.n, s.c, s.h, s.w}), w = randn_on({s.k, s.c, s.r, s.s});
        ops::Conv2dParams p;
        p.stride = {s.stride, s.stride};
        p.padding = {s.pad, s.pad};
        Tensor ours;
        double ms = 0;
        try {
          ops::set_conv_algo(c.algo);
          ours = ops::conv2d(x, w, Tensor(), p);
          ms = time_ms(o_.device, o_.reps, [&] { (void)ops::conv2d(x, w, Tensor(), p); });
          ops::set_conv_algo("");
        } catch (...) {
          ops::set_conv_algo("");
          throw;
        }
        r.ours = fmt("%.2f TFLOP/s (%.3f ms)", s.flops() / ms * 1e-9, ms);
        reference_conv(r, s, c.family, x, w, ours, ms);
      });
    }
  }

  void reference_conv(Row& r, const ConvSpec& s, bench::CudnnFamily family, const Tensor& x,
                      const Tensor& w, const Tensor& ours, double ours_ms) {
    if (!cuda_) {
      ops::Conv2dParams p;
      p.stride = {s.stride, s.stride};
      p.padding = {s.pad, s.pad};
      r.ref = "-";
      check(r, rel_err(ours.cpu(), ops::conv2d(x.cpu(), w.cpu(), Tensor(), p)), 1e-4);
      return;
    }
#if EMBER_BENCH_CUDNN
    Tensor y = empty({s.n, s.k, s.out_h(), s.out_w()}, {kFloat32, o_.device});
    const auto* xp = static_cast<const float*>(x.data_ptr());
    const auto* wp = static_cast<const float*>(w.data_ptr());
    auto* yp = static_cast<float*>(y.data_ptr());
    try {
      bench::CudnnConv ref(s, o_.device.index, xp, wp, yp, size_t{1} << 30, family);
      const double ms = time_ms(o_.device, o_.reps, [&] { ref.run(xp, wp, yp); });
      r.ref = fmt("cuDNN %.2f TFLOP/s (%.3f ms) ", s.flops() / ms * 1e-9, ms) + ref.algo_name();
      r.ratio = ms / ours_ms;
    } catch (const std::exception& e) {
      r.ref = "n/a: " + first_line(e.what());
      return;
    }
    check(r, rel_err(ours, y), 1e-4);
#else
    (void)x, (void)w, (void)ours, (void)ours_ms, (void)s, (void)family;
    r.ref = "n/a: built without cuDNN";
#endif
  }

  static std::string shape_str(const Shape& s) {
    std::string out;
    for (int64_t v : s) out += (out.empty() ? "" : "x") + std::to_string(v);
    return out;
  }

  void print() const {
    std::printf("\n== bench_gpu summary (%s%s)\n", o_.device.str().c_str(),
                o_.small ? ", small sizes" : "");
    std::printf("%-34s | %-34s | %-44s | %-6s | %-6s | %s\n", "row", "ours", "reference", "ratio",
                "target", "verdict");
    for (const Row& r : rows_) {
      const std::string ratio = std::isnan(r.ratio) ? "-" : fmt("%.2f", r.ratio);
      const std::string target = std::isnan(r.target) ? "-" : fmt(">=%.1f", r.target);
      std::printf("%-34s | %-34s | %-44s | %-6s | %-6s | %s\n", r.name.c_str(), r.ours.c_str(),
                  r.ref.c_str(), ratio.c_str(), target.c_str(), r.verdict.c_str());
    }
    std::printf("bench_gpu: done%s\n", wrong_ ? " (WRONG results above)" : "");
  }

  Options o_;
  bool cuda_;
  Generator gen_{1234};
  std::vector<Row> rows_;
  double copy_gbs_ = 0;
  bool wrong_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      o.device = Device::parse(argv[++i]);
    } else if (a == "--small") {
      o.small = true;
    } else if (a == "--reps" && i + 1 < argc) {
      o.reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_gpu [--device cuda|emu] [--small] [--reps N]\n");
      return 2;
    }
  }
  if (o.device.is_emu() && !o.small) o.reps = std::min(o.reps, 3);
  try {
    gpu::require_device(o.device);
  } catch (const std::exception& e) {
    std::printf("bench_gpu: %s unusable: %s\n", o.device.str().c_str(), e.what());
    return 1;
  }
  std::printf("bench_gpu on %s (%s), %d timed runs per row\n", o.device.str().c_str(),
              gpu::backend(o.device).properties(o.device.index).name.c_str(), o.reps);
  return Bench(o).run();
}

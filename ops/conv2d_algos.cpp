// The built-in convolution algorithms: each one registry entry, with per-device support, cost
// and a run function per direction that calls the device's kernels.
//   im2col_gemm    cpu: the receptive fields unrolled into a column matrix, then Eigen's GEMM
//   direct         cpu, cuda, emu: the definition's loops (one thread per output on a GPU)
//   implicit_gemm  cpu (AVX2 or AVX-512 CPUs, float32), cuda, emu: a GEMM whose operand tiles are
//                  gathered from the NCHW tensors, no column matrix
//   fft            cuda, emu: overlap-save FFT convolution (ops/conv2d_fft.cpp)
// and, each in a file of its own, winograd_f2x2_3x3, winograd_f4x4_3x3 and (cuda, emu)
// winograd_f2x2_3x3_fused (ops/conv2d_winograd.cpp), and the half ones, implicit_gemm_tc and
// widened_f32 (ops/conv2d_half.cpp).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

#include "kernels/cpu/conv2d_direct.h"
#include "kernels/cpu/conv2d_im2col.h"
#include "kernels/cpu/conv2d_implicit_gemm.h"
#include "ops/conv2d_algo.h"
#include "ops/dispatch.h"
#include "runtime/trace.h"

namespace ember::ops {

namespace {

namespace kc = kernels::cpu;
using kernels::ConvShape;

bool is_gpu(DeviceType t) {
  return t == DeviceType::CUDA || t == DeviceType::EMU;
}

// What every built-in algorithm needs of a key on the devices it has kernels for.
bool floats_nchw(const ConvKey& k, std::string* why) {
  if (k.dtype != DType::f32 && k.dtype != DType::f64)
    return *why = "float32 and float64 only", false;
  if (k.layout != ConvLayout::nchw) return *why = "NCHW layout only", false;
  return true;
}

double threads() {
  return static_cast<double>(std::max(1, omp_get_max_threads()));
}

// Ember's own kernels: the cpu's on the cpu, the CUDA kernels on cuda and emu.
ConvBackend ember_backend(DeviceType t) {
  return t == DeviceType::CPU ? ConvBackend::cpu : ConvBackend::ember_cuda;
}

// --- im2col_gemm (cpu) -------------------------------------------------------------------------

class Im2colGemm final : public ConvAlgo {
 public:
  Im2colGemm() : ConvAlgo("im2col_gemm", /*deterministic=*/true) {}  // fixed batch partition

  ConvBackend backend(DeviceType) const override { return ConvBackend::cpu; }
  bool supports(const ConvKey& k, std::string* why) const override {
    if (k.device_type != DeviceType::CPU) return *why = "runs on the cpu only", false;
    return floats_nchw(k, why);
  }
  size_t workspace_bytes(const ConvKey& k) const override {
    return kc::conv2d_im2col_workspace_bytes(k.dtype, k.shape, k.direction);
  }
  // Eigen's packed GEMM in multiply-adds per nanosecond per thread, plus unrolling the columns.
  // Below a million multiply-adds the threads gain nothing (measured on MobileNet's 1x1 layers
  // at batch 1: 0.039 ms on two threads against implicit_gemm's 0.030 on one), the threshold
  // under which implicit_gemm also stays on one thread.
  double cost(const ConvKey& k) const override {
    const ConvShape& s = k.shape;
    const double rate = k.dtype == DType::f64 ? 4.0 : 8.0;
    const double cols = s.is_pointwise() ? 0.0 : double(s.n) * s.c * s.r * s.s * s.oh * s.ow;
    const double t = s.macs() >= (int64_t{1} << 20) ? threads() : 1.0;
    return 2000.0 + static_cast<double>(s.macs()) / (rate * t) + cols / t;
  }
  void run_forward(const ConvKey& k, const void* x, const void* w, const void* bias, void* y,
                   ConvWorkspace ws) const override {
    kc::conv2d_fwd_im2col(k.dtype, k.shape, x, w, bias, y, ws.data, ws.bytes);
  }
  void run_backward_data(const ConvKey& k, const void* dy, const void* w, void* dx,
                         ConvWorkspace ws) const override {
    kc::conv2d_bwd_data_im2col(k.dtype, k.shape, dy, w, dx, ws.data, ws.bytes);
  }
  void run_backward_filter(const ConvKey& k, const void* dy, const void* x, void* dw,
                           ConvWorkspace ws) const override {
    kc::conv2d_bwd_filter_im2col(k.dtype, k.shape, dy, x, dw, ws.data, ws.bytes);
  }
};

// --- direct (cpu, cuda, emu) ---------------------------------------------------------------------

class Direct final : public ConvAlgo {
 public:
  Direct() : ConvAlgo("direct", /*deterministic=*/true) {}  // fixed summation order per output

  ConvBackend backend(DeviceType t) const override { return ember_backend(t); }
  bool supports(const ConvKey& k, std::string* why) const override { return floats_nchw(k, why); }
  size_t workspace_bytes(const ConvKey&) const override { return 0; }
  // The cpu's scalar loops (backward data slower: modulo tests per tap); on a GPU every operand
  // comes from global memory per multiply-add (its counted flops at an eighth of
  // implicit_gemm's rate), which still wins for depthwise-like shapes, where a GEMM tile would
  // be mostly empty (implicit_gemm's cost).
  // GPU work: two loads per multiply-add of the live taps, one store per output.
  ConvWork work(const ConvKey& k, bool bias) const override {
    ConvWork w;
    if (!is_gpu(k.device_type)) return w;
    const ConvShape& s = k.shape;
    const double macs = double(conv_live_macs(s));
    const bool fwd = k.direction == ConvDirection::forward;
    const double outputs = double(fwd                                           ? s.y_numel()
                                  : k.direction == ConvDirection::backward_data ? s.x_numel()
                                                                                : s.w_numel());
    w.flops = 2.0 * macs;
    w.bytes = double(itemsize(k.dtype)) * (2.0 * macs + outputs * (fwd && bias ? 2.0 : 1.0));
    w.launches = outputs > 0 ? 1 : 0;
    return w;
  }
  double cost(const ConvKey& k) const override {
    const double macs = static_cast<double>(k.shape.macs());
    if (is_gpu(k.device_type)) return 10.0 + work(k, false).flops / 100.0;
    // The cpu's depthwise forward accumulates vectors of outputs in registers
    // (kernels/cpu/conv2d_direct.cpp, Note [Polyphase depthwise]): 4-17 GMAC/s on one AVX2 core
    // on MobileNet's layers, about 30x the scalar loops and 1.2-3x implicit_gemm, whose tiles
    // are mostly empty there; ranked first for every depthwise shape.
    const ConvShape& s = k.shape;
    if (k.direction == ConvDirection::forward && s.groups > 1 && s.groups == s.c && s.k == s.c)
      return macs / (16.0 * threads());
    const double slow = k.direction == ConvDirection::backward_data ? 0.5 : 1.0;
    return macs / (0.5 * slow * threads());
  }
  void run_forward(const ConvKey& k, const void* x, const void* w, const void* bias, void* y,
                   ConvWorkspace) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_fwd_direct(k.dtype, k.shape, x, w, bias, y, stream_of(dev));
  }
  // The cpu clamps as it writes y (Note [Clamped convolutions]); a residual is added after.
  bool run_forward_clamped(const ConvKey& k, const void* x, const void* w, const void* bias,
                           void* y, ConvWorkspace, ConvClamp c) const override {
    if (k.device_type != DeviceType::CPU || c.residual != nullptr) return false;
    const kc::OutputClamp clamp{c.lo, c.hi};
    trace::Scope traced("kernel", "conv2d_fwd_direct_clamped", k.device());
    kc::conv2d_fwd_direct_clamped(k.dtype, k.shape, x, w, bias, y, &clamp);
    return true;
  }
  void run_backward_data(const ConvKey& k, const void* dy, const void* w, void* dx,
                         ConvWorkspace) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_bwd_data_direct(k.dtype, k.shape, dy, w, dx, stream_of(dev));
  }
  void run_backward_filter(const ConvKey& k, const void* dy, const void* x, void* dw,
                           ConvWorkspace) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_bwd_filter_direct(k.dtype, k.shape, dy, x, dw, stream_of(dev));
  }
};

// --- implicit_gemm (cpu with AVX2 or AVX-512, cuda, emu) -----------------------------------------

class ImplicitGemm final : public ConvAlgo {
 public:
  // cpu: a fixed partition of the panels; GPU: split-K partial sums added in a fixed order.
  ImplicitGemm() : ConvAlgo("implicit_gemm", /*deterministic=*/true) {}

  ConvBackend backend(DeviceType t) const override { return ember_backend(t); }
  bool supports(const ConvKey& k, std::string* why) const override {
    if (!floats_nchw(k, why)) return false;
    const char* reason = "";
    try {
      if (kernels_for(k.device())
              .conv2d_implicit_gemm_supports(k.dtype, k.shape, k.direction, &reason))
        return true;
    } catch (const DeviceError& e) {  // a device this build has no kernels for
      return *why = e.what(), false;
    }
    return *why = reason, false;
  }
  size_t workspace_bytes(const ConvKey& k) const override {
    return kernels_for(k.device())
        .conv2d_implicit_gemm_workspace_bytes(k.dtype, k.shape, k.direction);
  }
  // cpu: the micro-kernels run about twice Eigen's rate (16 multiply-adds per AVX-512
  // instruction, against im2col's 8 per unit) on filter counts rounded up to their tiles; the
  // kernel estimates its own time (kernels/cpu/conv2d_implicit_gemm.h) in instructions of the
  // instruction set it runs (AVX2: 8 multiply-adds each, so the same convolution costs twice as
  // many), on the threads it will use, whole panels and filter packing included, so few filters
  // in a tile (the first layer's backward data) or few columns in a panel (a 2 x 2 image at
  // batch 1, 4 of 32) leave im2col_gemm cheaper.
  // GPU: ~8x the direct kernels' rate on the counted flops of its plan (work(): whole tiles, so
  // the unused rows, columns and reduction steps of the last tiles are paid for) and a fixed
  // cost per launch (split-K's second kernel too).
  double cost(const ConvKey& k) const override {
    const ConvShape& s = k.shape;
    if (!is_gpu(k.device_type)) {
      // AVX2's units measured at about twice the rate of the fit (which was AVX-512's): on AMD
      // EPYC (two FMA pipes) the kernels ran 1.5-1.9x im2col_gemm's speed where the counted work
      // was equal (docs/conv.md, "AVX2 and the implicit GEMM's cost").
      const char* isa = kc::conv2d_implicit_gemm_isa();
      const double unit = isa != nullptr && std::strcmp(isa, "avx2") == 0 ? 0.55 : 1.0;
      return 1000.0 + unit * kc::conv2d_implicit_gemm_work(s, k.direction);
    }
    const ConvWork w = work(k, false);
    return 20.0 * double(std::max<int64_t>(w.launches, 1)) + w.flops / 800.0;
  }
  // GPU work, from the plan the kernels run: every block's whole tile over the reduction in
  // steps of 8; the gathered operand's live taps loaded once per column tile, the filter (or dy,
  // backward-filter) once per row tile; one store per result, and split-K's partial sums added.
  ConvWork work(const ConvKey& k, bool bias) const override {
    ConvWork w;
    if (!is_gpu(k.device_type)) return w;
    const kernels::ConvGemmPlan p =
        kernels_for(k.device()).conv2d_implicit_gemm_plan(k.dtype, k.shape, k.direction);
    if (p.kernel != kernels::ConvGemmKernel::tiled) return w;
    const ConvShape& s = k.shape;
    const double item = double(itemsize(k.dtype)), g = double(s.groups);
    const double row_tiles = double((p.rows + p.bm - 1) / p.bm);
    const double col_tiles = double((p.cols + p.bn - 1) / p.bn);
    const double tile = double(p.bm) * p.bn * 8.0;
    // The gathered tensor's live (pixel, tap) pairs: per image and channel of the sum.
    const double live = double(conv_taps_along(s.oh, s.r, s.h, s.stride_h, s.pad_h, s.dil_h) *
                               conv_taps_along(s.ow, s.s, s.w, s.stride_w, s.pad_w, s.dil_w));
    const double gathered = col_tiles * g * double(s.n) * live *
                            double(k.direction == ConvDirection::backward_data ? s.kg() : s.cg());
    if (k.direction == ConvDirection::backward_filter) {
      double steps = 0;  // over the splits, each ceil(its length / 8)
      for (int64_t split = 0; split < p.splits; ++split) {
        const int64_t len = std::min(p.chunk, p.depth - split * p.chunk);
        steps += double(len > 0 ? (len + 7) / 8 : 0);
      }
      w.flops = 2.0 * row_tiles * col_tiles * g * steps * tile;
      const double dy = row_tiles * g * double(p.depth) * double(p.cols);
      const double stores = double(p.splits) * double(s.w_numel());
      const double reduce = p.splits > 1 ? double(p.splits + 1) * double(s.w_numel()) : 0.0;
      w.bytes = item * (gathered + dy + stores + reduce);
      w.launches = p.splits > 1 ? 2 : 1;
      return w;
    }
    const double steps = double((p.depth + 7) / 8);
    w.flops = 2.0 * row_tiles * col_tiles * g * steps * tile;
    const double filters = row_tiles * g * double(p.depth) * double(p.cols);
    const double results = double(p.rows) * double(p.cols) * g;
    const bool with_bias = bias && k.direction == ConvDirection::forward;
    w.bytes = item * (gathered + filters + results * (with_bias ? 2.0 : 1.0));
    w.launches = 1;
    return w;
  }
  // GPU: the tile and split the kernels run (kernels/conv_shape.h, ConvGemmPlan), e.g.
  // "tile 256x16 (8x4 per thread, 128 threads), grid 1x1x4, split-K 4 of 256, workspace 3456 B".
  std::string plan(const ConvKey& k) const override {
    if (!is_gpu(k.device_type)) return {};
    const kernels::ConvGemmPlan p =
        kernels_for(k.device()).conv2d_implicit_gemm_plan(k.dtype, k.shape, k.direction);
    if (p.kernel != kernels::ConvGemmKernel::tiled) return "nothing to compute";
    std::ostringstream os;
    os << "tile " << p.bm << "x" << p.bn << " (" << p.tm << "x" << p.tn << " per thread, "
       << p.threads << " threads), grid " << p.grid[0] << "x" << p.grid[1] << "x" << p.grid[2];
    if (p.splits > 1) os << ", split-K " << p.splits << " of " << p.chunk;
    if (p.workspace_bytes > 0) os << ", workspace " << p.workspace_bytes << " B";
    return os.str();
  }
  void run_forward(const ConvKey& k, const void* x, const void* w, const void* bias, void* y,
                   ConvWorkspace ws) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_fwd_implicit_gemm(k.dtype, k.shape, x, w, bias, y, ws.data, ws.bytes,
                                              stream_of(dev));
  }
  // The cpu clamps in the micro-kernels, before the stores (Note [Clamped convolutions]).
  bool run_forward_clamped(const ConvKey& k, const void* x, const void* w, const void* bias,
                           void* y, ConvWorkspace ws, ConvClamp c) const override {
    if (k.device_type != DeviceType::CPU) return false;
    const kc::OutputClamp clamp{c.lo, c.hi};
    trace::Scope traced("kernel", "conv2d_fwd_implicit_gemm_clamped", k.device());
    kc::conv2d_fwd_implicit_gemm_clamped(k.shape, x, w, bias, y, ws.data, ws.bytes, &clamp,
                                         static_cast<const float*>(c.residual), c.packed_filters,
                                         c.packed_isa);
    return true;
  }
  void run_backward_data(const ConvKey& k, const void* dy, const void* w, void* dx,
                         ConvWorkspace ws) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_bwd_data_implicit_gemm(k.dtype, k.shape, dy, w, dx, ws.data, ws.bytes,
                                                   stream_of(dev));
  }
  void run_backward_filter(const ConvKey& k, const void* dy, const void* x, void* dw,
                           ConvWorkspace ws) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_bwd_filter_implicit_gemm(k.dtype, k.shape, dy, x, dw, ws.data, ws.bytes,
                                                     stream_of(dev));
  }
};

}  // namespace

ConvAlgoPtr make_fft_conv_algo();  // ops/conv2d_fft.cpp

std::vector<ConvAlgoPtr> builtin_conv_algos() {
  std::vector<ConvAlgoPtr> algos = {std::make_shared<const Im2colGemm>(),
                                    std::make_shared<const Direct>(),
                                    std::make_shared<const ImplicitGemm>()};
  for (ConvAlgoPtr& a : winograd_conv_algos()) algos.push_back(std::move(a));
  algos.push_back(make_fft_conv_algo());
  for (ConvAlgoPtr& a : half_conv_algos()) algos.push_back(std::move(a));
  algos.push_back(cudnn_conv_family());
  algos.push_back(cudnn_v7_conv_family());
  return algos;
}

}  // namespace ember::ops

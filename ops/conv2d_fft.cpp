// The `fft` convolution algorithm: overlap-save FFT convolution on cuda and emu (kernels/cuda/
// conv2d_fft.cu; docs/conv.md, "FFT convolution"), forward and backward-data, stride 1,
// dilation 1, groups 1. One registry entry (builtin_conv_algos, ops/conv2d_algos.cpp).
#include <algorithm>
#include <memory>
#include <sstream>

#include "kernels/kernel_table.h"
#include "ops/conv2d_algo.h"
#include "ops/dispatch.h"

namespace ember::ops {

namespace {

using kernels::ConvFftPlan;
using kernels::ConvShape;

bool is_gpu(DeviceType t) {
  return t == DeviceType::CUDA || t == DeviceType::EMU;
}

class Fft final : public ConvAlgo {
 public:
  // Every sum in a fixed order: the products over channels one thread each, chunk after chunk.
  Fft() : ConvAlgo("fft", /*deterministic=*/true) {}

  // Only Ember's GPU kernels run it (the cpu's table entries say so).
  ConvBackend backend(DeviceType) const override { return ConvBackend::ember_cuda; }

  bool supports(const ConvKey& k, std::string* why) const override {
    if (!is_gpu(k.device_type)) return *why = "runs on cuda and emu only (the GPU backends)", false;
    if (k.layout != ConvLayout::nchw) return *why = "NCHW layout only", false;
    const char* reason = "";
    try {
      if (kernels_for(k.device()).conv2d_fft_supports(k.dtype, k.shape, k.direction, &reason))
        return true;
    } catch (const DeviceError& e) {  // a device this build has no kernels for
      return *why = e.what(), false;
    }
    // The reason, and the key it is about: a forced `fft` fails with both.
    return *why = std::string(reason) + " (" + conv_key_string(k) + ")", false;
  }

  size_t workspace_bytes(const ConvKey& k) const override {
    return kernels_for(k.device()).conv2d_fft_workspace_bytes(k.dtype, k.shape, k.direction);
  }

  // Note [FFT cost]: in the units of the other GPU costs (implicit_gemm: 20 per launch + flops
  // / 800; direct: 10 + flops / 100), from the counted work (work() below), with T the plan's
  // tile and P = N * tiles per image:
  //   products   P * C * K * T (T/2 + 1) complex multiply-adds, 8 flops each, at the direct
  //              kernels' rate (one thread per sum, operands from global memory: / 100);
  //   transforms ~T^2 log2 T each, at the same rate (/ 50 per butterfly point): C * K filters
  //              (per image chunk), P * C inputs (per output chunk), P * K inverses;
  //   launches   10 each (4 per chunk).
  // A 3 x 3 filter keeps 14 of 16 points per side but pays T (T/2 + 1) / (14^2 * 9) ~ 0.08
  // complex products per multiply-add of the direct sum: slower than the implicit GEMM. The ratio
  // falls as R^2 grows: from 7 x 7 on images of several tiles (56 x 56, 64 channels) the FFT
  // wins, on 16 x 16 it still loses (docs/conv.md has the table).
  double cost(const ConvKey& k) const override {
    const ConvFftPlan p = plan_of(k);
    const bool bwd = k.direction == ConvDirection::backward_data;
    const ConvShape& s = k.shape;
    const double ca = double(bwd ? s.k : s.c), ko = double(bwd ? s.c : s.k);
    const double P = double(s.n) * double(p.tiles_h * p.tiles_w);
    const double t = p.tile, per_transform = t * t * std::log2(t);
    const double transforms =
        (double(p.chunks[0]) * ca * ko + double(p.chunks[2]) * P * ca + P * ko) * per_transform;
    const ConvWork w = work(k, false);
    const double estimate = 10.0 * double(w.launches) + w.flops / 100.0 + transforms / 50.0;
    // Below 7 x 7 the estimate comes within its own error of implicit_gemm's (5 x 5 on 224 x 224,
    // 64 channels in and out: 5 % apart), so it is doubled there: FFT for large filters only.
    return std::max(s.r, s.s) < 7 ? 2.0 * estimate : estimate;
  }

  // The work of the chunks' kernels as kernels/cuda/conv2d_fft.cu runs them (ops/conv2d_work.h):
  // per chunk of images, output and input channels, the filter spectra (R x S loads, a spectrum
  // stored per pair), the input windows' spectra (the windows inside the image loaded, a spectrum
  // stored per tile) and the products (two complex loads per multiply-add, the running sum read
  // after the first input chunk); per image and output chunk, the inverses (a spectrum loaded,
  // the valid outputs stored, the bias read by every thread of a block).
  ConvWork work(const ConvKey& k, bool bias) const override {
    ConvWork w;
    const ConvShape& s = k.shape;
    const bool bwd = k.direction == ConvDirection::backward_data;
    const int64_t ca = bwd ? s.k : s.c, ko = bwd ? s.c : s.k;
    const int64_t ha = bwd ? s.oh : s.h, wa = bwd ? s.ow : s.w;
    const int64_t ho = bwd ? s.h : s.oh, wo = bwd ? s.w : s.ow;
    const int64_t pad_h = bwd ? s.r - 1 - s.pad_h : s.pad_h,
                  pad_w = bwd ? s.s - 1 - s.pad_w : s.pad_w;
    if (s.n * ko * ho * wo == 0) return w;
    const ConvFftPlan p = plan_of(k);
    const double item = double(itemsize(k.dtype)), cplx = 2.0 * item, F = double(p.spectrum);
    const double windows = double(windows_inside(p.tiles_h, p.out_h, p.tile, pad_h, ha) *
                                  windows_inside(p.tiles_w, p.out_w, p.tile, pad_w, wa));
    const int64_t tiles = p.tiles_h * p.tiles_w;
    for (int64_t n0 = 0; n0 < s.n; n0 += p.images) {
      const double images = double(std::min(p.images, s.n - n0)), P = images * double(tiles);
      for (int64_t o0 = 0; o0 < ko; o0 += p.out_chunk) {
        const double oc = double(std::min(p.out_chunk, ko - o0));
        for (int64_t a0 = 0; a0 == 0 || a0 < ca; a0 += p.in_chunk) {
          const double ac = double(std::min(p.in_chunk, ca - a0));
          if (ac > 0) {
            w += {0.0, oc * ac * (item * double(s.r * s.s) + cplx * F), 1};
            w += {0.0, ac * (item * images * windows + cplx * P * F), 1};
          }
          w += {8.0 * oc * P * F * ac, cplx * oc * P * F * (2.0 * ac + (a0 > 0 ? 2.0 : 1.0)), 1};
        }
        const double biases = bias && !bwd ? oc * P * double(p.threads) : 0.0;
        w += {0.0, cplx * oc * P * F + item * (oc * images * double(ho * wo) + biases), 1};
      }
    }
    return w;
  }

  // "tile 32 (26x26 outputs each, 2x2 per image), chunks 1x1x1 of 4 images, 16 input and 32
  // output channels, workspace 2437120 B".
  std::string plan(const ConvKey& k) const override {
    const ConvFftPlan p = plan_of(k);
    std::ostringstream os;
    os << "tile " << p.tile << " (" << p.out_h << "x" << p.out_w << " outputs each, " << p.tiles_h
       << "x" << p.tiles_w << " per image), chunks " << p.chunks[0] << "x" << p.chunks[1] << "x"
       << p.chunks[2] << " of " << p.images << " images, " << p.in_chunk << " input and "
       << p.out_chunk << " output channels, workspace " << p.workspace_bytes << " B";
    return os.str();
  }

  void run_forward(const ConvKey& k, const void* x, const void* w, const void* bias, void* y,
                   ConvWorkspace ws) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_fwd_fft(k.dtype, k.shape, x, w, bias, y, ws.data, ws.bytes,
                                    stream_of(dev));
  }
  void run_backward_data(const ConvKey& k, const void* dy, const void* w, void* dx,
                         ConvWorkspace ws) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_bwd_data_fft(k.dtype, k.shape, dy, w, dx, ws.data, ws.bytes,
                                         stream_of(dev));
  }
  void run_backward_filter(const ConvKey& k, const void*, const void*, void*,
                           ConvWorkspace) const override {
    EMBER_THROW(ops::ConvNotSupported, "fft: backward-filter is not implemented (",
                conv_key_string(k), ")");
  }

 private:
  static ConvFftPlan plan_of(const ConvKey& k) {
    return kernels_for(k.device()).conv2d_fft_plan(k.dtype, k.shape, k.direction);
  }
};

}  // namespace

ConvAlgoPtr make_fft_conv_algo() {
  return std::make_shared<const Fft>();
}

}  // namespace ember::ops

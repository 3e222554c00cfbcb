// The Winograd convolution algorithms, one registry entry each:
//   winograd_f2x2_3x3        F(2x2, 3x3): 16 multiplies per 2x2 outputs and channel instead of 36
//   winograd_f4x4_3x3        F(4x4, 3x3): 36 per 4x4 instead of 144
//   winograd_f2x2_3x3_fused  F(2x2, 3x3) in one GPU kernel (cuda and emu only)
// The first two are non-fused (filter, input and output transforms around alpha^2 batched
// products) on the cpu, cuda and emu; the fused one keeps V and M on the chip (Note [Fused
// Winograd F(2x2, 3x3)] in kernels/cuda/conv2d_winograd.cu). Kernels: kernels/cpu/
// conv2d_winograd.cpp and kernels/cuda/conv2d_winograd.cu; the tables kernels/winograd_math.h,
// the geometry and workspace kernels/winograd_shape.h. All are for 3x3 filters with stride 1,
// dilation 1, groups 1 and padding 0..2, float32 and float64, forward and backward-data.
//
// Note [Winograd backward data]
// dx is the full correlation of dy with the filter rotated by 180 degrees and its channels
// swapped: dx[n,c,h,v] = sum_{k,r,s} dy[n,k,h+r-(2-p_h),v+s-(2-p_w)] * w[k,c,2-r,2-s], i.e. the
// forward stride-1 correlation of dy (K channels) with w'[c][k][r][s] = w[k][c][2-r][2-s] and
// padding p' = R - 1 - p = 2 - p. Its output is (OH + 2 - 2p) = H rows, as it should be. p' must
// be a padding, 0..2, so the forward's padding must be 0..2 too. The kernels read w' straight
// from w (WinogradGeometry::filter_index), so there is no rotated copy.
// Backward-filter would need F(3x3, 2x2) with dy's tiles as the filters; it is not implemented,
// and the registry runs another algorithm for it.
#include <omp.h>

#include <algorithm>
#include <memory>
#include <sstream>

#include "kernels/winograd_shape.h"
#include "ops/conv2d_algo.h"
#include "ops/dispatch.h"

namespace ember::ops {

namespace {

using kernels::ConvShape;
using kernels::WinogradGeometry;
using kernels::WinogradTile;

bool is_gpu(DeviceType t) {
  return t == DeviceType::CUDA || t == DeviceType::EMU;
}

double threads() {
  return static_cast<double>(std::max(1, omp_get_max_threads()));
}

std::string pair(int64_t a, int64_t b) {
  return std::to_string(a) + "x" + std::to_string(b);
}

// Why a key is outside what the Winograd kernels compute, or "" when it is inside.
std::string winograd_refusal(const ConvKey& k) {
  const ConvShape& s = k.shape;
  if (k.dtype != DType::f32 && k.dtype != DType::f64) return "float32 and float64 only";
  if (k.layout != ConvLayout::nchw) return "NCHW layout only";
  if (k.direction == ConvDirection::backward_filter)
    return "backward-filter is not implemented through Winograd (it would need F(3x3, 2x2)); "
           "another algorithm runs it";
  if (s.r != 3 || s.s != 3) return "3x3 filters only, got " + pair(s.r, s.s);
  if (s.stride_h != 1 || s.stride_w != 1)
    return "stride 1 only, got " + pair(s.stride_h, s.stride_w);
  if (s.dil_h != 1 || s.dil_w != 1) return "dilation 1 only, got " + pair(s.dil_h, s.dil_w);
  if (s.groups != 1) return "groups 1 only, got " + std::to_string(s.groups);
  if (s.pad_h < 0 || s.pad_h > 2 || s.pad_w < 0 || s.pad_w > 2)
    return "padding 0 to 2 only (backward-data runs with padding 2 - p), got " +
           pair(s.pad_h, s.pad_w);
  return "";
}

const char* winograd_name(WinogradTile t) {
  switch (t) {
    case WinogradTile::f2x2_3x3:
      return "winograd_f2x2_3x3";
    case WinogradTile::f4x4_3x3:
      return "winograd_f4x4_3x3";
    case WinogradTile::f2x2_3x3_fused:
      return "winograd_f2x2_3x3_fused";
  }
  return "?";
}

class Winograd final : public ConvAlgo {
 public:
  explicit Winograd(WinogradTile tile)
      : ConvAlgo(winograd_name(tile),
                 /*deterministic=*/true),  // no atomics; every element summed in a fixed order
        tile_(tile) {}

  // The fused kernel is a GPU kernel only: on the cpu it is one of the GPU algorithms refusing it.
  ConvBackend backend(DeviceType t) const override {
    return t == DeviceType::CPU && tile_ != WinogradTile::f2x2_3x3_fused ? ConvBackend::cpu
                                                                          : ConvBackend::ember_cuda;
  }
  bool supports(const ConvKey& k, std::string* why) const override {
    const std::string refusal = winograd_refusal(k);
    if (!refusal.empty()) return *why = refusal, false;
    if (tile_ == WinogradTile::f2x2_3x3_fused && !is_gpu(k.device_type))
      return *why =
                 "runs on cuda and emu only (a GPU kernel: one block keeps its tiles' "
                 "transforms in shared memory)",
             false;
    if (k.device_type == DeviceType::CUDA) {
      try {
        kernels_for(k.device());
      } catch (const DeviceError& e) {  // a build without CUDA kernels
        return *why = e.what(), false;
      }
    }
    return true;
  }
  size_t workspace_bytes(const ConvKey& k) const override {
    return kernels::winograd_workspace_bytes(geometry(k), itemsize(k.dtype));
  }
  double cost(const ConvKey& k) const override;
  ConvWork work(const ConvKey& k, bool bias) const override {
    const Parts p = parts(k, bias);
    ConvWork w = p.streamed;
    return w += p.products;
  }
  // "F(4x4,3x3): 36 products of 64x64 by 64x512, workspace 7077888 B".
  std::string plan(const ConvKey& k) const override {
    const WinogradGeometry g = geometry(k);
    std::ostringstream os;
    os << "F(" << g.m << "x" << g.m << ",3x3)" << (g.fused ? " fused" : "") << ": " << g.positions()
       << " products of " << g.co << "x" << g.ci << " by " << g.ci << "x" << g.tiles()
       << ", workspace " << workspace_bytes(k) << " B";
    return os.str();
  }
  void run_forward(const ConvKey& k, const void* x, const void* w, const void* bias, void* y,
                   ConvWorkspace ws) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_fwd_winograd(k.dtype, tile_, k.shape, x, w, bias, y, ws.data, ws.bytes,
                                         stream_of(dev));
  }
  void run_backward_data(const ConvKey& k, const void* dy, const void* w, void* dx,
                         ConvWorkspace ws) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_bwd_data_winograd(k.dtype, tile_, k.shape, dy, w, dx, ws.data, ws.bytes,
                                              stream_of(dev));
  }
  void run_backward_filter(const ConvKey& k, const void*, const void*, void*,
                           ConvWorkspace) const override {
    EMBER_THROW(ops::ConvNotSupported, name(), ": ", winograd_refusal(k));
  }

 private:
  // The GPU kernels' work in two parts, priced differently (Note [Winograd cost]).
  struct Parts {
    ConvWork streamed, products;
  };
  Parts parts(const ConvKey& k, bool bias) const;
  WinogradGeometry geometry(const ConvKey& k) const {
    return kernels::winograd_geometry(tile_, k.shape, k.direction);
  }
  WinogradTile tile_;
};

// Note [Winograd cost]
// The estimate, in the units of the other algorithms' costs. On the cpu:
//   products   alpha^2 * co * ci * tiles multiply-adds at Eigen's rate, as im2col_gemm's,
//   traffic    alpha^2 * (ci + co) * tiles elements of V and M, each written once and read once,
//              and transformed: the non-fused algorithm's price, which makes it lose to a GEMM
//              where the channels are few (little arithmetic per element moved),
//   filters    alpha^2 * co * ci elements of U, transformed, packed and read by every product:
//              what makes F(4x4) (36 per filter) dearer than F(2x2) (16) where there are few
//              tiles to share them, so F(4x4) wins only where tiles are many;
//   2000 + (macs / r + 4 * traffic + 20 * filters) / threads, r = 8 (float32) or 4 (float64) as
//   im2col_gemm's, the traffic and filter terms 1.5 times dearer in float64.
// tiles = N ceil(OH/m) ceil(OW/m) counts the padded edge tiles, which cost as much as the rest.
// The cpu's weights were fitted to single-threaded timings of the kernels (docs/conv.md,
// "Winograd").
// On a GPU, from the counted work of the kernels that run (Winograd::parts, ops/conv2d_work.h):
//   20 per launch + flops / 800 (implicit_gemm's rate on its tiles, which the products' tiles
//   and the fused kernel's 4 x 4 outer products match) + the elements moved: those streamed
//   through memory once (the transforms' inputs and outputs: V, M, U, x, y) at 1/10 each, those
//   re-read by every block of a product (U and V in gemm_batched's tiles; the tiles' windows and
//   U in the fused kernel), from L2 mostly, at 1/40. Fusion saves the round trip of V and M
//   (alpha^2 (ci + co) elements a tile) and pays in windows re-read once per 16 channels; F(4x4)
//   has a third of F(2x2)'s products per output but 36 U elements a filter to F(2x2)'s 16, so it
//   wins where tiles are many. These GPU weights are an estimate from bandwidth and FMA rates,
//   not a measurement.
double Winograd::cost(const ConvKey& k) const {
  const WinogradGeometry g = geometry(k);
  if (is_gpu(k.device_type)) {
    const Parts p = parts(k, /*bias=*/false);
    const double item = double(itemsize(k.dtype));
    return 20.0 * double(p.streamed.launches + p.products.launches) +
           (p.streamed.flops + p.products.flops) / 800.0 + p.streamed.bytes / item / 10.0 +
           p.products.bytes / item / 40.0;
  }
  const double pos = static_cast<double>(g.positions());
  const double traffic = pos * static_cast<double>(g.ci + g.co) * g.tiles();
  const double filters = pos * static_cast<double>(g.co) * g.ci;
  const double macs = pos * static_cast<double>(g.co) * g.ci * g.tiles();
  const bool f64 = k.dtype == DType::f64;
  const double rate = f64 ? 4.0 : 8.0, moves = f64 ? 1.5 : 1.0;
  return 2000.0 + (macs / rate + moves * (4.0 * traffic + 20.0 * filters)) / threads();
}

// The work the GPU kernels do (ops/conv2d_work.h), kernel by kernel as they run:
//   filter   9 loads and alpha^2 stores per (output, input) channel pair;
//   input    the tiles' windows inside the image, alpha^2 stores per (channel, tile);
//   products one gemm_batched of alpha^2 items (gemm_work, from the plan it runs);
//   output   alpha^2 loads (+ the bias) per (channel, tile), one store per output;
//   fused    per block of 16 channels x 16 tiles and chunk of input channels, 16 x 16 x chunk
//            multiply-adds at each of the 16 positions; every block reads its tiles' windows
//            and its channels' U, so the windows are read once per channel block and U once
//            per tile block; one store per output (+ the bias per channel and tile).
// `streamed` holds the filter, input and output transforms (and the fused kernel's stores),
// `products` the products (and the fused kernel's loads and arithmetic).
Winograd::Parts Winograd::parts(const ConvKey& k, bool bias) const {
  Parts w;
  const WinogradGeometry g = geometry(k);
  if (!is_gpu(k.device_type) || g.n * g.co * g.oh * g.ow == 0) return w;
  const double item = double(itemsize(k.dtype)), a2 = double(g.positions());
  const double windows = double(g.n) * double(windows_inside(g.tiles_h, g.m, g.alpha, g.ph, g.h)) *
                         double(windows_inside(g.tiles_w, g.m, g.alpha, g.pw, g.w));
  const bool with_bias = bias && k.direction == ConvDirection::forward;
  const double outputs = double(g.n * g.co * g.oh * g.ow);
  if (g.co * g.ci > 0) w.streamed += {0.0, item * double(g.co * g.ci) * (9.0 + a2), 1};
  if (g.fused) {
    using B = kernels::WinogradFusedBlock;
    const int64_t chunk = B::chunk(itemsize(k.dtype));
    const double t_blocks = double((g.tiles() + B::kTiles - 1) / B::kTiles);
    const double k_blocks = double((g.co + B::kChannels - 1) / B::kChannels);
    const double chunks = double((g.ci + chunk - 1) / chunk);
    const double flops = t_blocks * k_blocks * chunks * B::kThreads * 2.0 * 16.0 * double(chunk);
    const double loads = k_blocks * double(g.ci) * windows + t_blocks * a2 * double(g.co * g.ci);
    const double stores = outputs + (with_bias ? double(g.co * g.tiles()) : 0.0);
    w.products += {flops, item * loads, 1};
    w.streamed += {0.0, item * stores, 0};
    return w;
  }
  if (g.co * g.ci > 0)
    w.streamed += {0.0, item * double(g.ci) * (windows + a2 * double(g.tiles())), 1};
  const kernels::GemmShape products = kernels::winograd_products_shape(g);
  w.products =
      gemm_work(kernels_for(k.device()).gemm_plan(k.dtype, products, nullptr, nullptr, nullptr),
                products, int64_t(item));
  const double per_tile = a2 + (with_bias ? 1.0 : 0.0);
  w.streamed += {0.0, item * (double(g.co * g.tiles()) * per_tile + outputs), 1};
  return w;
}

}  // namespace

std::vector<ConvAlgoPtr> winograd_conv_algos() {
  return {std::make_shared<const Winograd>(WinogradTile::f2x2_3x3),
          std::make_shared<const Winograd>(WinogradTile::f4x4_3x3),
          std::make_shared<const Winograd>(WinogradTile::f2x2_3x3_fused)};
}

}  // namespace ember::ops

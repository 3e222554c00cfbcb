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

size_t item_size(DType t) {
  return t == DType::f64 ? sizeof(double) : sizeof(float);
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
    return kernels::winograd_workspace_bytes(geometry(k), item_size(k.dtype));
  }
  double cost(const ConvKey& k) const override;
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
  WinogradGeometry geometry(const ConvKey& k) const {
    return kernels::winograd_geometry(tile_, k.shape, k.direction);
  }
  WinogradTile tile_;
};

// Note [Winograd cost]
// The estimate, in the units of the other algorithms' costs:
//   products   alpha^2 * co * ci * tiles multiply-adds at the GEMM's rate (the cpu: Eigen's, as
//              im2col_gemm's; the GPU: implicit_gemm's rate on a full tile, with the rows and
//              columns rounded up to the 64 x 64 tile of kernels/cuda/gemm.cu's smallest tile),
//   traffic    alpha^2 * (ci + co) * tiles elements of V and M, each written once and read once,
//              and transformed: the non-fused algorithm's price, which makes it lose to a GEMM
//              where the channels are few (little arithmetic per element moved),
//   filters    alpha^2 * co * ci elements of U, transformed, packed and read by every product:
//              what makes F(4x4) (36 per filter) dearer than F(2x2) (16) where there are few
//              tiles to share them, so F(4x4) wins only where tiles are many;
//   and a fixed cost per call (four passes, or four launches).
// Fused (GPU only), one kernel in place of the last three: no V or M traffic, but every block
// of 16 channels x 16 tiles re-reads its tiles' inputs (16 elements each) and its channels' U,
// from L2 mostly, a quarter of a memory element's price:
//   40 + macs'' / 400 + (16 ci tiles ceil(co/16) + 16 co ci ceil(tiles/16)) / 40
//      + (co tiles m^2 + filters) / 10,  macs'' with co and tiles rounded up to 16.
// tiles = N ceil(OH/m) ceil(OW/m) counts the padded edge tiles, which cost as much as the rest.
//   cpu: 2000 + (macs / r + 4 * traffic + 20 * filters) / threads, r = 8 (float32) or 4
//        (float64) as im2col_gemm's, the traffic and filter terms 1.5 times dearer in float64;
//   GPU: 80 + macs' / 400 + (traffic + filters) / 10, macs' with the rounded rows and columns.
// The cpu's weights were fitted to single-threaded timings of the kernels (docs/conv.md,
// "Winograd"); the GPU's are an estimate from bandwidth and FMA rates, not a measurement.
double Winograd::cost(const ConvKey& k) const {
  const WinogradGeometry g = geometry(k);
  const double pos = static_cast<double>(g.positions());
  const double traffic = pos * static_cast<double>(g.ci + g.co) * g.tiles();
  const double filters = pos * static_cast<double>(g.co) * g.ci;
  if (g.fused) {
    auto blocks16 = [](int64_t v) { return static_cast<double>((v + 15) / 16); };
    const double macs = pos * 16 * blocks16(g.co) * 16 * blocks16(g.tiles()) * g.ci;
    const double rereads =
        16.0 * g.ci * g.tiles() * blocks16(g.co) + 16.0 * g.co * g.ci * blocks16(g.tiles());
    const double writes = static_cast<double>(g.co) * g.tiles() * g.m * g.m;
    return 40.0 + macs / 400.0 + rereads / 40.0 + (writes + filters) / 10.0;
  }
  if (is_gpu(k.device_type)) {
    auto round64 = [](int64_t v) { return static_cast<double>((v + 63) / 64 * 64); };
    const double macs = pos * round64(g.co) * round64(g.tiles()) * g.ci;
    return 80.0 + macs / 400.0 + (traffic + filters) / 10.0;
  }
  const double macs = pos * static_cast<double>(g.co) * g.ci * g.tiles();
  const bool f64 = k.dtype == DType::f64;
  const double rate = f64 ? 4.0 : 8.0, moves = f64 ? 1.5 : 1.0;
  return 2000.0 + (macs / rate + moves * (4.0 * traffic + 20.0 * filters)) / threads();
}

}  // namespace

std::vector<ConvAlgoPtr> winograd_conv_algos() {
  return {std::make_shared<const Winograd>(WinogradTile::f2x2_3x3),
          std::make_shared<const Winograd>(WinogradTile::f4x4_3x3),
          std::make_shared<const Winograd>(WinogradTile::f2x2_3x3_fused)};
}

}  // namespace ember::ops

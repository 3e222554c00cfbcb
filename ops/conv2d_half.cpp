// The float16/bfloat16 convolution algorithms, one registry entry each:
//   implicit_gemm_tc  cuda, emu: the Tensor Core implicit GEMM (kernels/cuda/conv2d_tc.cu), half
//                     operands, float32 sums, one rounding; the weight gradient is summed in
//                     float32 in the workspace and rounded once to the weight's dtype
//   widened_f32       cpu, cuda, emu: the fallback, the float32 convolution of widened copies
//                     (its algorithm chosen by the registry for the float32 key), rounded once
// cuDNN's engines take half keys too (the `cudnn` family, tensor-op math). Note [Half
// convolutions] says how a half convolution is chosen.
//
// Note [Half convolutions]
// A half key (ConvKey::dtype float16 or bfloat16; its math ConvMathMode::tensor_op on cuda and
// emu) is ranked like any other: cuDNN's half engines first on cuda (tensor-op math, float32
// compute type), then implicit_gemm_tc, then widened_f32, which every half key supports, so that
// a channel count, a geometry or a GPU that the half algorithms cannot take (bfloat16 Tensor Cores
// before sm_80) still runs, under a name `ember algos` and EMBER_LOG=select show. Forcing an
// algorithm that has no half path (set_conv_algo("direct")) runs it on widened copies: the
// registry ranks widened_f32, whose float32 run is forced to the same name. Forcing widened_f32
// itself forces half keys only: its float32 runs are ranked as usual.
// widened_f32's copies (float32 operands and result: twice the half tensors' bytes) are tensors of
// its own, not the declared workspace, so the workspace limit never refuses the one algorithm that
// always runs; its float32 run is a convolution of its own key, selected (and cached, and listed
// by conv_keys_seen) like any float32 one.
#include <memory>
#include <sstream>

#include "ops/conv2d_algo.h"
#include "ops/dispatch.h"

namespace ember::ops {

namespace {

using kernels::ConvShape;

bool half_nchw(const ConvKey& k, std::string* why) {
  if (!is_half(k.dtype)) return *why = "float16 and bfloat16 only", false;
  if (k.layout != ConvLayout::nchw) return *why = "NCHW layout only", false;
  return true;
}

// The element count of each direction's operands and result: (a, b, out) as the run functions
// take them.
struct Operands {
  int64_t a, b, out;
};
Operands operands(const ConvKey& k) {
  const ConvShape& s = k.shape;
  switch (k.direction) {
    case ConvDirection::forward:
      return {s.x_numel(), s.w_numel(), s.y_numel()};
    case ConvDirection::backward_data:
      return {s.y_numel(), s.w_numel(), s.x_numel()};
    case ConvDirection::backward_filter:
      break;
  }
  return {s.y_numel(), s.x_numel(), s.w_numel()};
}

// dst[i] = src[i] converted, for n contiguous elements on `dev`.
void convert(Device dev, DType dst_t, void* dst, DType src_t, const void* src, int64_t n) {
  if (n == 0) return;
  StridedIndex<2> index;
  make_strided_index<2>({n}, {Shape{1}, Shape{1}}, index);
  kernels_for(dev).copy_strided(dst_t, src_t, index, dst, src, stream_of(dev));
}

// --- implicit_gemm_tc (cuda, emu) ----------------------------------------------------------------

class ImplicitGemmTc final : public ConvAlgo {
 public:
  // One float32 sum per result in a fixed order, no split of the reduction.
  ImplicitGemmTc() : ConvAlgo("implicit_gemm_tc", /*deterministic=*/true) {}

  ConvBackend backend(DeviceType) const override { return ConvBackend::ember_cuda; }
  bool supports(const ConvKey& k, std::string* why) const override {
    if (!k.device().is_gpu_like()) return *why = "runs on cuda and emu only (Tensor Cores)", false;
    if (!half_nchw(k, why)) return false;
    try {
      const char* no = kernels_for(k.device()).conv2d_tc_supports(k.dtype, k.shape, k.direction);
      if (*no) return *why = no, false;
    } catch (const DeviceError& e) {  // a device this build has no kernels for
      return *why = e.what(), false;
    }
    return true;
  }
  // The float32 weight gradient, before it is rounded.
  size_t workspace_bytes(const ConvKey& k) const override {
    return k.direction == ConvDirection::backward_filter
               ? static_cast<size_t>(k.shape.w_numel()) * sizeof(float)
               : 0;
  }
  // In the units of the other GPU costs (implicit_gemm: 20 per launch + flops / 800): Tensor Cores
  // multiply-add about 8x faster than the float32 units the implicit GEMM runs on.
  double cost(const ConvKey& k) const override {
    return 20.0 * (k.direction == ConvDirection::backward_filter ? 2.0 : 1.0) +
           2.0 * double(k.shape.macs()) / 6400.0;
  }
  std::string plan(const ConvKey& k) const override {
    return k.direction == ConvDirection::backward_filter
               ? "mma.sync, float32 sums; the weight gradient float32 in the workspace, rounded "
                 "once"
               : "mma.sync, float32 sums, rounded once";
  }
  void run_forward(const ConvKey& k, const void* x, const void* w, const void* bias, void* y,
                   ConvWorkspace) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_tc(k.dtype, k.shape, k.direction, x, w, bias, y, stream_of(dev));
  }
  void run_backward_data(const ConvKey& k, const void* dy, const void* w, void* dx,
                         ConvWorkspace) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_tc(k.dtype, k.shape, k.direction, dy, w, nullptr, dx, stream_of(dev));
  }
  void run_backward_filter(const ConvKey& k, const void* dy, const void* x, void* dw,
                           ConvWorkspace ws) const override {
    const Device dev = k.device();
    kernels_for(dev).conv2d_tc(k.dtype, k.shape, k.direction, dy, x, nullptr, ws.data,
                               stream_of(dev));
    convert(dev, k.dtype, dw, kFloat32, ws.data, k.shape.w_numel());
  }
};

// --- widened_f32 (cpu, cuda, emu) ----------------------------------------------------------------

class WidenedF32 final : public ConvAlgo {
 public:
  // As deterministic as the float32 algorithm it runs, which the deterministic policy (in the
  // float32 key too) restricts in the same way.
  WidenedF32() : ConvAlgo(kHalfFallbackAlgo, /*deterministic=*/true) {}

  ConvBackend backend(DeviceType t) const override {
    return t == DeviceType::CPU ? ConvBackend::cpu : ConvBackend::ember_cuda;
  }
  bool supports(const ConvKey& k, std::string* why) const override { return half_nchw(k, why); }
  size_t workspace_bytes(const ConvKey&) const override { return 0; }
  // The fallback: after every algorithm that computes in half, whatever their estimates.
  double cost(const ConvKey&) const override { return 1e15; }
  std::string rank_note(const ConvKey&) const override {
    return "the fallback: the float32 convolution of widened copies";
  }
  std::string plan(const ConvKey& k) const override {
    const Operands n = operands(k);
    return "float32 copies of " + format_bytes(sizeof(float) * size_t(n.a + n.b + n.out)) +
           ", the float32 algorithm chosen for " + conv_key_string(float32_key(k));
  }
  void run_forward(const ConvKey& k, const void* x, const void* w, const void* bias, void* y,
                   ConvWorkspace) const override {
    run(k, x, w, bias, y);
  }
  void run_backward_data(const ConvKey& k, const void* dy, const void* w, void* dx,
                         ConvWorkspace) const override {
    run(k, dy, w, nullptr, dx);
  }
  void run_backward_filter(const ConvKey& k, const void* dy, const void* x, void* dw,
                           ConvWorkspace) const override {
    run(k, dy, x, nullptr, dw);
  }

 private:
  static ConvKey float32_key(const ConvKey& k) {
    ConvKey f = k;
    f.dtype = kFloat32;
    f.math = conv_math_mode(kFloat32, k.device());
    return f;
  }
  // The direction of `k` from (a, b), as the run functions take them, into `out`.
  static void run(const ConvKey& k, const void* a, const void* b, const void* bias, void* out) {
    const Device dev = k.device();
    const Operands n = operands(k);
    const TensorOptions f32{kFloat32, dev};
    const Tensor a32 = empty({n.a}, f32), b32 = empty({n.b}, f32), out32 = empty({n.out}, f32);
    const Tensor bias32 = bias ? empty({k.shape.k}, f32) : Tensor();
    convert(dev, kFloat32, a32.data_ptr(), k.dtype, a, n.a);
    convert(dev, kFloat32, b32.data_ptr(), k.dtype, b, n.b);
    if (bias) convert(dev, kFloat32, bias32.data_ptr(), k.dtype, bias, k.shape.k);
    const ConvKey f = float32_key(k);
    switch (k.direction) {
      case ConvDirection::forward:
        run_conv_forward(f, a32.data_ptr(), b32.data_ptr(), bias ? bias32.data_ptr() : nullptr,
                         out32.data_ptr());
        break;
      case ConvDirection::backward_data:
        run_conv_backward_data(f, a32.data_ptr(), b32.data_ptr(), out32.data_ptr());
        break;
      case ConvDirection::backward_filter:
        run_conv_backward_filter(f, a32.data_ptr(), b32.data_ptr(), out32.data_ptr());
        break;
    }
    convert(dev, k.dtype, out, kFloat32, out32.data_ptr(), n.out);
  }
};

}  // namespace

std::vector<ConvAlgoPtr> half_conv_algos() {
  return {std::make_shared<const ImplicitGemmTc>(), std::make_shared<const WidenedF32>()};
}

}  // namespace ember::ops

// Cross entropy (fused with log_softmax), negative log-likelihood and mean squared error for the
// GPU backends, declared for both builds. Classification data is contiguous [n, c, s] (s = the
// product of the extra dims), targets contiguous int64 [n, s]; position p = i * s + j of the
// target matches the class column x[i, :, j], as in kernels/cpu/loss.h.
#pragma once

#include <cstdint>

#include "kernels/cuda/gpu_types.cuh"
#include "runtime/gpu.h"

namespace ember::kernels::gpu_types {

struct NllDims {
  int64_t n = 0, c = 0, s = 1;
  int64_t ignore_index = -100;
  double smoothing = 0.0;  // label smoothing (cross entropy); 0 for nll_loss
};

// Doubles of scratch mse_fwd needs for a reduced loss: one partial sum per block.
constexpr int64_t kMsePartials = 256;

}  // namespace ember::kernels::gpu_types

// Forward losses. Per position (per element for mse) the loss is written in t to `loss` when it
// is not null; when `total` is not null, the per-position losses are also summed in double
// (through `scratch`: n * s doubles for the classification losses, kMsePartials for mse) and
// total[0] = t(sum / divisor) (divisor: 1 for a sum, the count of positions not ignored or of
// elements for a mean; 0 gives NaN, as PyTorch).
//
// requires: t is f32 or f64 (std::invalid_argument otherwise); every pointer on the backend's
//           device; every target either ignore_index or in [0, c): the kernels do not check
//           (ops/loss.cpp checks on the host).
// ensures:  cross_entropy_fwd: log_probs = log_softmax(logits) over c (as softmax_fwd) and, per
//           position, 0 where target == ignore_index, else
//           -(1 - smoothing) lp[target] - smoothing / c * sum_k lp[k], from the log_probs as
//           written; one warp or block per row when s == 1, one thread per position otherwise.
//           nll_fwd: the same from given log-probabilities. The values of kernels/cpu/loss up
//           to the order of the double sums and the device's exp/log rounding.
#define EMBER_LOSS_KERNEL_DECLS                                                                 \
  void cross_entropy_fwd(gpu_types::Scalar t, const gpu_types::NllDims& d, const void* logits,  \
                         const int64_t* target, void* log_probs, void* loss, double* scratch,   \
                         double divisor, void* total, ::ember::gpu::Stream stream);             \
  void nll_fwd(gpu_types::Scalar t, const gpu_types::NllDims& d, const void* log_probs,         \
               const int64_t* target, void* loss, double* scratch, double divisor, void* total, \
               ::ember::gpu::Stream stream);                                                    \
  /* Input gradient with g_p = grad[p * grad_stride] * scale (grad_stride 0: one scalar):       \
     fused (cross entropy, from log_probs): g_p (exp(lp[k]) - smoothing / c                     \
     - (1 - smoothing) [k == t]); not fused (nll_loss; log_probs unused): -g_p [k == t]; 0 at   \
     ignored positions. dx: contiguous [n, c, s]. */                                            \
  void nll_bwd(gpu_types::Scalar t, const gpu_types::NllDims& d, bool fused,                    \
               const void* log_probs, const int64_t* target, const void* grad,                  \
               int64_t grad_stride, double scale, void* dx, ::ember::gpu::Stream stream);       \
  void mse_fwd(gpu_types::Scalar t, int64_t n, const void* x, const void* y, void* loss,        \
               double* scratch, double divisor, void* total, ::ember::gpu::Stream stream);      \
  /* dx = 2 (x - y) * grad[i * grad_stride] * scale over n contiguous elements. */              \
  void mse_bwd(gpu_types::Scalar t, int64_t n, const void* x, const void* y, const void* grad,  \
               int64_t grad_stride, double scale, void* dx, ::ember::gpu::Stream stream);

namespace ember::kernels::cuda {
EMBER_LOSS_KERNEL_DECLS
}  // namespace ember::kernels::cuda
namespace ember::kernels::emu {
EMBER_LOSS_KERNEL_DECLS
}  // namespace ember::kernels::emu
#undef EMBER_LOSS_KERNEL_DECLS

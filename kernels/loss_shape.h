// The plain parameters of the classification losses (nll_loss, cross_entropy) and of mse_loss,
// shared by the CPU and GPU kernels and by ops/loss.
#pragma once

#include <cstdint>

namespace ember::kernels {

// Log-probabilities (or logits) as contiguous [n, c, s] (s = the product of the extra dims, 1
// for [N, C] input); targets contiguous [n, s] class indices.
struct NllShape {
  int64_t n = 0, c = 0, s = 1;
  int64_t ignore_index = -100;
  double smoothing = 0.0;  // label smoothing (cross entropy); 0 for nll_loss
  // With class weights (`weight` not null): their sum, which the smoothed gradient needs.
  double weight_total = 0.0;
};

// The kernels (position p = i * s + j of the target matches the class column x[i, :, j]):
//   cross_entropy_fwd  log_probs = log_softmax(logits) over c, then the nll below from them;
//   nll_fwd            per position 0 where target == ignore_index, else
//                      -(1 - smoothing) w[target] lp[target] - smoothing / c * sum_k w[k] lp[k]
//                      (PyTorch's weighted, label-smoothed loss; w = 1 when weight is null);
//   mse_fwd            per element (x - y)^2.
// The forward losses write the per-position values to `loss` when it is not null and, when
// `total` is not null, their sum in double (through `workspace`: nll_workspace_bytes /
// mse_workspace_bytes) as total[0] = t(sum / divisor) (divisor: 1 for a sum, the count of
// positions not ignored (weighted: the sum of their targets' weights) or of elements for a mean;
// 0 gives NaN, as PyTorch).
//   nll_bwd            g_p = grad[p * grad_stride] * scale (grad_stride 0: one scalar); fused
//                      (cross entropy, from log_probs; W = weight_total, or c unweighted):
//                      g_p (exp(lp[k]) ((1 - smoothing) w[t] + smoothing / c W)
//                      - (1 - smoothing) w[t] [k == t] - smoothing / c w[k]); not fused
//                      (nll_loss; log_probs unused): -g_p w[t] [k == t]; 0 at ignored
//                      positions. dx contiguous [n, c, s].
//   mse_bwd            dx = 2 (x - y) * grad[i * grad_stride] * scale.
// requires: t float32 or float64; weight null or c elements of t; every target either
//           ignore_index or in [0, c): the kernels do not check (ops/loss.cpp checks on the host).

}  // namespace ember::kernels

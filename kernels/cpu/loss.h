// CPU kernels for the classification and regression losses.
//
// Classification input is contiguous [n, c, s] (s = product of the extra dims, 1 for [N, C]);
// targets are contiguous int64 [n, s]; position p = i * s + j of the target matches the class
// column x[i, :, j].
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace ember::kernels::cpu {

struct NllShape {
  int64_t n = 0, c = 0, s = 1;
};

// The first position whose target is neither ignore_index nor in [0, c), or -1 if none.
int64_t nll_find_bad_target_cpu(const NllShape& shape, int64_t ignore_index, const int64_t* target);

// Per position: 0 where target == ignore_index, else
//   -(1 - smoothing) * lp[t] - smoothing / c * sum_k lp[k]      (lp = log-probabilities).
// Writes each to `loss` (n * s values of type t) when it is not null; returns their sum (in
// double) and sets *count to the number of positions not ignored.
// requires: t is f32 or f64; every target valid (see nll_find_bad_target_cpu).
double nll_fwd_cpu(DType t, const NllShape& shape, int64_t ignore_index, double smoothing,
                   const void* log_probs, const int64_t* target, void* loss, int64_t* count);

// Input gradient, with g_p = grad[p * grad_stride] * scale (grad_stride 0: one scalar):
//   fused (cross entropy, from log_softmax output lp): g_p * (exp(lp[k]) - smoothing / c
//                                                        - (1 - smoothing) [k == t])
//   not fused (nll_loss): -g_p [k == t]
// and 0 for every k at ignored positions. dx is contiguous [n, c, s].
void nll_bwd_cpu(DType t, const NllShape& shape, int64_t ignore_index, double smoothing, bool fused,
                 const void* log_probs, const int64_t* target, const void* grad,
                 int64_t grad_stride, double scale, void* dx);

// Squared error over n contiguous elements: writes (x - y)^2 to `out` when it is not null and
// returns the sum (in double).
double mse_fwd_cpu(DType t, int64_t n, const void* x, const void* y, void* out);
// dx = 2 (x - y) * grad[i * grad_stride] * scale.
void mse_bwd_cpu(DType t, int64_t n, const void* x, const void* y, const void* grad,
                 int64_t grad_stride, double scale, void* dx);

}  // namespace ember::kernels::cpu

// The "normalise rows" kernel family behind layer_norm, group_norm and instance_norm: contiguous
// data seen as `rows` rows of `len` elements, each row normalised by its own mean and variance,
// then an optional per-channel affine. Plain values shared by the CPU and GPU kernels and ops/.
//
//   layer_norm    rows = prod(leading dims), len = prod(normalized_shape), groups 1, inner 1:
//                 element j of a row has channel j (weight of normalized_shape).
//   group_norm    rows = N * G, len = C/G * HW, groups G, inner HW: element j of row r has
//                 channel (r % G) * C/G + j / HW.
//   instance_norm rows = N * C, len = HW, groups C, inner HW: row r has channel r % C.
#pragma once

#include <cstdint>

#include "runtime/host_device.h"

namespace ember::kernels {

struct NormRowsShape {
  int64_t rows = 0, len = 0;
  int64_t groups = 1;  // row r's block of channels is r % groups
  int64_t inner = 1;   // consecutive elements of a row that share a channel
  double eps = 1e-5;

  EMBER_HOST_DEVICE int64_t channels_per_row() const { return inner > 0 ? len / inner : 0; }
  EMBER_HOST_DEVICE int64_t channels() const { return groups * channels_per_row(); }
  // The channel of element j of row r.
  EMBER_HOST_DEVICE int64_t channel(int64_t r, int64_t j) const {
    return (r % groups) * channels_per_row() + j / inner;
  }
};

// The kernels (kernels/kernel_table.h):
//   norm_rows_fwd(t, s, x, weight, bias, y, mean, rstd)
//     mean[r] = sum_j x[r, j] / len, var[r] = sum_j (x[r, j] - mean[r])^2 / len (biased), both
//     accumulated in double (two passes, fixed order), rstd[r] = 1 / sqrt(var[r] + eps);
//     y = (x - mean) * rstd * weight[ch] + bias[ch] (weight, bias may be null: 1 and 0).
//   norm_rows_bwd(t, s, x, dy, weight, mean, rstd, dx, dweight, dbias, workspace)
//     with xhat = (x - mean) * rstd and gw = dy * weight[ch]:
//     dx = rstd * (gw - mean_j(gw) - xhat * mean_j(gw * xhat)) per row (row sums in double);
//     dweight[ch] = sum of dy * xhat, dbias[ch] = sum of dy over the channel's elements of every
//     row, summed in double in a fixed order (deterministic). dx, dweight, dbias may each be
//     null (not computed); workspace holds norm_rows_bwd_workspace_bytes(s).
// requires: t float32, float64, float16 or bfloat16; x, y, dy, dx contiguous rows * len elements
//           of t; weight, bias, dweight, dbias `channels()` elements of t; mean and rstd `rows`
//           elements of float64 for a float64 t, float32 otherwise (half types keep float32
//           statistics); len > 0 when rows > 0; len % inner == 0.

}  // namespace ember::kernels

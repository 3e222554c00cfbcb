// The loss scaler's kernels (nn/amp.h), PyTorch's _amp_foreach_non_finite_check_and_unscale_ and
// _amp_update_scale_, shared by the CPU and GPU tables. Their operands are device scalars, so a
// scaled training step never waits for the device (Note [Host waits] in runtime/gpu.h).
//
// amp_unscale(t, g, n, found_inf, scale):
//   requires: t float32 or float64; g n contiguous elements; found_inf and scale (may be null)
//             one float32 each on the same device.
//   ensures:  *found_inf = 1 if some g[i] is inf or NaN (never written otherwise: the caller
//             zeroes it); then, when scale is not null and inv = float(1 / double(*scale)) is
//             not 1, every g[i] *= inv (in g's type). The check reads each value before scaling.
// amp_update_scale(scale, tracker, found_inf, growth, backoff, interval): one thread:
//   if (*found_inf) { *scale *= backoff; *tracker = 0; }
//   else if (*tracker + 1 == interval) { s = float(*scale * growth); if finite, *scale = s;
//                                        *tracker = 0; }
//   else ++*tracker;
//   (the factors in double, the product rounded to float once, as PyTorch's kernel).
// amp_count_step(step, found_inf): one thread: *step += 1 unless *found_inf (found_inf may be
//   null: always). step: a float64 scalar, the optimiser's completed steps of one parameter.
#pragma once

// The geometry of a 2-D pooling window over NCHW planes, as the kernels see it (plain
// integers, shared by CPU and CUDA kernels).
#pragma once

#include <cstdint>

namespace ember::kernels {

// The kernels: {max,avg,adaptive_avg}_pool2d_{fwd,bwd} over contiguous NCHW planes.
// requires: t float32 or float64; the window fields valid (ops/pool2d.cpp checks them);
//           max_pool2d_bwd's workspace holds max_pool2d_bwd_workspace_bytes(s).
// ensures:  Windows follow PyTorch: output (i, j) covers rows i*sh - ph + a*dh (a < kh), columns
//           alike, clipped to the input; adaptive windows [floor(i*H/OH), ceil((i+1)*H/OH)).
//           max: y = the window's maximum and idx its position h*W + w in the plane (the first
//           maximum; a NaN wins, the last NaN giving the index); avg: the sum over the divisor
//           (divisor_override, else the window clipped to the padded input with
//           count_include_pad, else to the input). The backwards write all of dx, each input
//           summing in increasing output order the gradients of the outputs that chose it (max)
//           or whose window holds it (average): deterministic, the same order on every device.
//           Indices outside the plane are an IndexError on the cpu and ignored on a GPU.
struct PoolShape {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t oh = 0, ow = 0;              // output
  int64_t kh = 1, kw = 1;              // window
  int64_t sh = 1, sw = 1;              // stride
  int64_t ph = 0, pw = 0;              // padding
  int64_t dh = 1, dw = 1;              // dilation (max pooling only)
  bool count_include_pad = true;       // avg pooling: divide by the padded window size
  int64_t divisor_override = 0;        // avg pooling: fixed divisor when > 0

  int64_t planes() const { return n * c; }
};

}  // namespace ember::kernels

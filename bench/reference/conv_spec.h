// The convolution shapes bench_gpu times.
#pragma once

#include <cstdint>

namespace ember::bench {

// NCHW input [n, c, h, w], filters [k, c, r, s], symmetric stride and padding, no dilation.
struct ConvSpec {
  int64_t n, c, h, w, k, r, s, stride, pad;
  int64_t out_h() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t out_w() const { return (w + 2 * pad - s) / stride + 1; }
  double flops() const { return 2.0 * n * k * out_h() * out_w() * c * r * s; }
};

}  // namespace ember::bench

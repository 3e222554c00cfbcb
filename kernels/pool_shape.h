// The geometry of a 2-D pooling window over NCHW planes, as the kernels see it (plain
// integers, shared by CPU and CUDA kernels).
#pragma once

#include <cstdint>

namespace ember::kernels {

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

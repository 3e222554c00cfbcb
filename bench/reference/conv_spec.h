// The convolution shapes the GPU benchmarks and the ladders time, and the sampled float64
// reference the ladders check a forward result against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv_shape.h"

namespace ember::bench {

// NCHW input [n, c, h, w], filters [k, c, r, s], symmetric stride and padding, no dilation.
struct ConvSpec {
  int64_t n, c, h, w, k, r, s, stride, pad;
  int64_t out_h() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t out_w() const { return (w + 2 * pad - s) / stride + 1; }
  double flops() const { return 2.0 * n * k * out_h() * out_w() * c * r * s; }
  // The kernels' description of the same convolution.
  kernels::ConvShape shape() const {
    kernels::ConvShape cs;
    cs.n = n, cs.c = c, cs.h = h, cs.w = w, cs.k = k, cs.r = r, cs.s = s;
    cs.oh = out_h(), cs.ow = out_w();
    cs.stride_h = cs.stride_w = stride;
    cs.pad_h = cs.pad_w = pad;
    return cs;
  }
  // "3x3/1 64->64@56x56 N32".
  std::string str() const {
    return std::to_string(r) + "x" + std::to_string(s) + "/" + std::to_string(stride) + " " +
           std::to_string(c) + "->" + std::to_string(k) + "@" + std::to_string(h) + "x" +
           std::to_string(w) + " N" + std::to_string(n);
  }
};

// y = conv(x, w) in float64 at the given output positions (flat NCHW indices of y), and each
// position's sum of |x w| over its taps, the scale its rounding error is measured against.
struct ConvSampleReference {
  std::vector<int64_t> at;
  std::vector<double> ref, mag;

  ConvSampleReference(const ConvSpec& s, const std::vector<float>& hx, const std::vector<float>& hw,
                      std::vector<int64_t> positions)
      : at(std::move(positions)), ref(at.size()), mag(at.size()) {
    const int64_t oh = s.out_h(), ow = s.out_w();
    for (size_t e = 0; e < at.size(); ++e) {
      const int64_t o = at[e], j = o % ow, i = (o / ow) % oh;
      const int64_t f = (o / (ow * oh)) % s.k, img = o / (ow * oh * s.k);
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t r = 0; r < s.r; ++r)
          for (int64_t q = 0; q < s.s; ++q) {
            const int64_t ih = i * s.stride - s.pad + r, iw = j * s.stride - s.pad + q;
            if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
            const double t = double(hx[((img * s.c + c) * s.h + ih) * s.w + iw]) *
                             double(hw[((f * s.c + c) * s.r + r) * s.s + q]);
            ref[e] += t;
            mag[e] += std::fabs(t);
          }
    }
  }

  // The worst |y - ref| / sum |x w| over the positions.
  double error(const std::vector<float>& y) const {
    double worst = 0;
    for (size_t e = 0; e < at.size(); ++e)
      worst = std::max(worst, std::fabs(y[at[e]] - ref[e]) / std::max(mag[e], 1e-30));
    return worst;
  }
};

}  // namespace ember::bench

// The work the cost model counts for one convolution call on the GPU backends (docs/conv.md,
// "Counted work"): the floating-point operations of the products, the bytes moved to and from
// device memory, and the kernel launches. Each algorithm's ConvAlgo::work (ops/conv2d_algo.h)
// builds it from the plan its kernels run; the emulated kernels count the same quantities as they
// run (EMBER_COUNT_WORK, runtime/simt/work_count.h), and tests/cuda/test_conv_work_emu.cpp holds
// the two to 1 %.
//
// What is counted:
//   flops     2 per multiply-add of a product: a direct sum's taps, a GEMM's whole block tiles
//             (the padded rows and columns are computed, so they count), 8 per complex
//             multiply-add of the FFT's spectra. The Winograd and FFT transforms' additions are
//             not flops here: their price is in the elements they move and, for the FFT, a term
//             per transform.
//   bytes     every element a kernel thread loads from or stores to global memory, as the code
//             issues it: loads skipped for padding or for elements outside a tile's matrix are
//             not counted; the same element read by several blocks (or threads) counts each time.
#pragma once

#include <cstdint>

#include "kernels/conv_shape.h"
#include "kernels/gemm_shape.h"

namespace ember::ops {

struct ConvWork {
  double flops = 0;
  double bytes = 0;
  int64_t launches = 0;

  ConvWork& operator+=(const ConvWork& o) {
    flops += o.flops, bytes += o.bytes, launches += o.launches;
    return *this;
  }
};

// The (output, tap) pairs along one dimension whose input position lies inside the input:
// out positions o < out_size, taps t < taps, input o * stride - pad + t * dil in [0, in_size).
// A sum over a convolution's taps skips the others; the same pairs serve every direction.
int64_t conv_taps_along(int64_t out_size, int64_t taps, int64_t in_size, int64_t stride,
                        int64_t pad, int64_t dil);
// The multiply-adds of the direct sum of shape s (any direction: the pairs are the same), i.e.
// N * K * C/G * taps_h * taps_w with the padding's taps left out.
int64_t conv_live_macs(const kernels::ConvShape& s);
// The input elements inside the image of `tiles` windows of `window` positions, window t
// starting at t * step - pad, over an image of `size` positions.
int64_t windows_inside(int64_t tiles, int64_t step, int64_t window, int64_t pad, int64_t size);
// The work of one gemm_batched call (kernels/cuda/gemm.cu) of shape s that runs plan p.
ConvWork gemm_work(const kernels::GemmPlan& p, const kernels::GemmShape& s, int64_t item);

}  // namespace ember::ops

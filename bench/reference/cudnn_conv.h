// cuDNN's fastest fp32 forward convolution for one shape, of all its algorithms or of one family
// (its Winograd or its FFT ones): the peer bench_gpu compares Ember's convolutions with. Built only
// when cuDNN is (EMBER_BENCH_CUDNN).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "reference/conv_spec.h"

namespace ember::bench {

// Which of cuDNN's forward algorithms compete: all, WINOGRAD and WINOGRAD_NONFUSED, or FFT and
// FFT_TILING.
enum class CudnnFamily { any, winograd, fft };

class CudnnConv {
 public:
  // Picks the fastest algorithm of `family` with cudnnFindConvolutionForwardAlgorithmEx on these
  // buffers (float32 on cuda device `device`), in FMA math: no TF32 or other tensor-op
  // conversion. The workspace is at most `workspace_cap` bytes. Throws CudnnError when nothing
  // qualifies.
  CudnnConv(const ConvSpec& spec, int device, const float* x, const float* w, float* y,
            size_t workspace_cap, CudnnFamily family = CudnnFamily::any);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // One forward pass y = conv(x, w) with the chosen algorithm, on the default stream.
  void run(const float* x, const float* w, float* y);
  // The chosen algorithm's name, e.g. "IMPLICIT_PRECOMP_GEMM".
  const std::string& algo_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::bench

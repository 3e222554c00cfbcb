#include "reference/cudnn_conv.h"

#include <cudnn.h>

#include <string>
#include <vector>

#include "ops/cudnn/descriptors.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace ember::bench {

namespace {

// What a failed call was doing: the layer.
std::string about(const ConvSpec& s) {
  return "for the cuDNN reference of " + s.str();
}

bool in_family(cudnnConvolutionFwdAlgo_t a, CudnnFamily f) {
  switch (f) {
    case CudnnFamily::winograd:
      return a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
             a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    case CudnnFamily::fft:
      return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
    case CudnnFamily::any:
      return true;
  }
  return false;
}

}  // namespace

// The legacy algorithm search is deprecated in cuDNN 9 (Note [cuDNN's deprecated calls] in
// ops/cudnn/descriptors.cpp); the reference uses it on purpose: it is what frameworks called.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

struct CudnnConv::Impl {
  explicit Impl(const ConvSpec& s) : spec(s), d(s.shape(), kFloat32, /*allow_tf32=*/false) {}
  ConvSpec spec;
  ops::cudnn::ConvDescriptors d;  // FMA math: plain fp32 arithmetic, no TF32
  int device = 0;
  cudnnConvolutionFwdAlgo_t algo{};
  std::string name;
  Tensor workspace;
  size_t workspace_bytes = 0;
};

CudnnConv::CudnnConv(const ConvSpec& s, int device, const float* x, const float* w, float* y,
                     size_t workspace_cap, CudnnFamily family)
    : impl_(std::make_unique<Impl>(s)) {
  Impl& m = *impl_;
  m.device = device;
  const cudnnHandle_t h = ops::cudnn::handle(device, nullptr);
  m.workspace =
      empty({static_cast<int64_t>(workspace_cap)}, {kUInt8, Device(DeviceType::CUDA, device)});
  int count = 0;
  EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count), about(s));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(count));
  int returned = 0;
  EMBER_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
                        h, m.d.x.get(), x, m.d.w.get(), w, m.d.conv.get(), m.d.y.get(), y, count,
                        &returned, perf.data(), m.workspace.data_ptr(), workspace_cap),
                    about(s));
  for (int k = 0; k < returned; ++k) {  // sorted fastest first
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<size_t>(k)];
    // The descriptor asks for FMA math; a result that reports tensor-op math is skipped.
    if (p.status != CUDNN_STATUS_SUCCESS ||
        (p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH) ||
        !in_family(p.algo, family))
      continue;
    m.algo = p.algo;
    m.workspace_bytes = p.memory;
    m.name = ops::cudnn::legacy_algo_name(ops::ConvDirection::forward, p.algo);
    return;
  }
  EMBER_THROW(CudnnError, "cuDNN: no forward algorithm",
              family == CudnnFamily::winograd ? " of the Winograd family"
              : family == CudnnFamily::fft    ? " of the FFT family"
                                              : "",
              " in FMA math for this convolution");
}

CudnnConv::~CudnnConv() = default;

void CudnnConv::run(const float* x, const float* w, float* y) {
  Impl& m = *impl_;
  const float one = 1, zero = 0;
  EMBER_CUDNN_CHECK(
      cudnnConvolutionForward(ops::cudnn::handle(m.device, nullptr), &one, m.d.x.get(), x,
                              m.d.w.get(), w, m.d.conv.get(), m.algo, m.workspace.data_ptr(),
                              m.workspace_bytes, &zero, m.d.y.get(), y),
      about(m.spec));
}

#pragma GCC diagnostic pop

const std::string& CudnnConv::algo_name() const {
  return impl_->name;
}

}  // namespace ember::bench

#include "reference/cudnn_conv.h"

#include <cudnn.h>

#include <vector>

#include "runtime/error.h"
#include "runtime/tensor.h"

namespace ember::bench {

namespace {

#define BENCH_CUDNN_CHECK(stmt)                                                                    \
  do {                                                                                             \
    cudnnStatus_t st_ = (stmt);                                                                    \
    if (st_ != CUDNN_STATUS_SUCCESS)                                                               \
      EMBER_THROW(CudnnError, #stmt, " failed: ", cudnnGetErrorString(st_), " at ", __FILE__, ":", \
                  __LINE__);                                                                       \
  } while (0)

const char* algo_string(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "?";
  }
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

// One handle for the process (creating one loads cuDNN's kernels: slow), never destroyed.
cudnnHandle_t handle() {
  static cudnnHandle_t h = [] {
    cudnnHandle_t x = nullptr;
    BENCH_CUDNN_CHECK(cudnnCreate(&x));
    return x;
  }();
  return h;
}

}  // namespace

struct CudnnConv::Impl {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo{};
  std::string name;
  Tensor workspace;
  size_t workspace_bytes = 0;
  ~Impl() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

CudnnConv::CudnnConv(const ConvSpec& s, int device, const float* x, const float* w, float* y,
                     size_t workspace_cap, CudnnFamily family)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const cudnnHandle_t h = handle();
  BENCH_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.x));
  BENCH_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.y));
  BENCH_CUDNN_CHECK(cudnnCreateFilterDescriptor(&m.w));
  BENCH_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&m.conv));
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  BENCH_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(s.n),
                                               i(s.c), i(s.h), i(s.w)));
  BENCH_CUDNN_CHECK(cudnnSetFilter4dDescriptor(m.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(s.k),
                                               i(s.c), i(s.r), i(s.s)));
  BENCH_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(s.n),
                                               i(s.k), i(s.out_h()), i(s.out_w())));
  BENCH_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(m.conv, i(s.pad), i(s.pad), i(s.stride),
                                                    i(s.stride), 1, 1, CUDNN_CROSS_CORRELATION,
                                                    CUDNN_DATA_FLOAT));
  // FMA math: plain fp32 arithmetic (CUDNN_DEFAULT_MATH permits TF32 on Ampere and later).
  BENCH_CUDNN_CHECK(cudnnSetConvolutionMathType(m.conv, CUDNN_FMA_MATH));
  m.workspace =
      empty({static_cast<int64_t>(workspace_cap)}, {kUInt8, Device(DeviceType::CUDA, device)});
  int count = 0;
  BENCH_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(count));
  int returned = 0;
  BENCH_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h, m.x, x, m.w, w, m.conv, m.y, y, count,
                                                           &returned, perf.data(),
                                                           m.workspace.data_ptr(), workspace_cap));
  for (int k = 0; k < returned; ++k) {  // sorted fastest first
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<size_t>(k)];
    // The descriptor asks for FMA math; a result that reports tensor-op math is skipped.
    if (p.status != CUDNN_STATUS_SUCCESS ||
        (p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH) ||
        !in_family(p.algo, family))
      continue;
    m.algo = p.algo;
    m.workspace_bytes = p.memory;
    m.name = algo_string(p.algo);
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
  BENCH_CUDNN_CHECK(cudnnConvolutionForward(handle(), &one, m.x, x, m.w, w, m.conv, m.algo,
                                            m.workspace.data_ptr(), m.workspace_bytes, &zero, m.y,
                                            y));
}

const std::string& CudnnConv::algo_name() const {
  return impl_->name;
}

}  // namespace ember::bench

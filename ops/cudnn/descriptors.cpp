// cuDNN's status check, handles and descriptors (ops/cudnn/descriptors.h).
#include "ops/cudnn/descriptors.h"

#include <climits>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/cuda_check.h"
#include "runtime/error.h"

namespace ember::ops::cudnn {

void throw_status(cudnnStatus_t status, const char* call, const std::string& what, const char* file,
                  int line) {
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);  // the failed predicate, when cuDNN says one
  EMBER_THROW(CudnnError, call, " failed with ", cudnnGetErrorString(status), " (",
              static_cast<int>(status), ") ", what, detail[0] ? ": " : "", detail, " at ", file,
              ":", line);
}

namespace {

// Handles not in use by any thread, per device: a thread's handles go back here when it ends
// and serve the next thread, so there are never more than the threads that ran at once. None is
// ever destroyed (at exit that could run after the CUDA runtime has shut down).
struct Pool {
  std::mutex mu;
  std::vector<std::vector<cudnnHandle_t>> free;  // per device
};
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

// The calling thread's handles, per device (null until first used).
struct ThreadHandles {
  std::vector<cudnnHandle_t> per_device;
  ~ThreadHandles() {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    for (size_t d = 0; d < per_device.size(); ++d) {
      if (per_device[d] == nullptr) continue;
      if (p.free.size() <= d) p.free.resize(d + 1);
      p.free[d].push_back(per_device[d]);
    }
  }
};

cudnnHandle_t take_or_create(int device) {
  {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    if (size_t(device) < p.free.size() && !p.free[size_t(device)].empty()) {
      const cudnnHandle_t h = p.free[size_t(device)].back();
      p.free[size_t(device)].pop_back();
      return h;
    }
  }
  ::ember::detail::DeviceScope scope(device);
  cudnnHandle_t h = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreate(&h), "creating the handle of cuda:" + std::to_string(device));
  return h;
}

bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

int as_int(int64_t v) {
  return static_cast<int>(v);
}

}  // namespace

cudnnHandle_t handle(int device, gpu::Stream stream) {
  const gpu::Availability a = gpu::backend(DeviceType::CUDA).availability();
  if (!a.usable) EMBER_THROW(DeviceError, "cuDNN runs on cuda devices only: ", a.reason);
  EMBER_CHECK_T(DeviceError, device >= 0 && device < gpu::backend(DeviceType::CUDA).device_count(),
                "cuDNN: no cuda device ", device);
  thread_local ThreadHandles mine;
  if (mine.per_device.size() <= size_t(device)) mine.per_device.resize(size_t(device) + 1);
  cudnnHandle_t& h = mine.per_device[size_t(device)];
  if (h == nullptr) h = take_or_create(device);
  EMBER_CUDNN_CHECK(cudnnSetStream(h, static_cast<cudaStream_t>(stream)),
                    "binding the handle of cuda:" + std::to_string(device) + " to its stream");
  return h;
}

const char* conv_refusal(const kernels::ConvShape& s) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (s.x_numel() >= kLimit || s.y_numel() >= kLimit || s.w_numel() >= kLimit)
    return "cuDNN's descriptors take tensors of fewer than 2^31 elements";
  for (int64_t v : {s.n, s.c, s.h, s.w, s.k, s.r, s.s, s.pad_h, s.pad_w, s.stride_h, s.stride_w,
                    s.dil_h, s.dil_w, s.groups})
    if (!fits_int(v)) return "cuDNN's descriptors take sizes that fit a 32-bit int";
  return nullptr;
}

cudnnDataType_t data_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDNN_DATA_FLOAT;
    case DType::f64:
      return CUDNN_DATA_DOUBLE;
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      break;
  }
  EMBER_THROW(DTypeError, "cuDNN: no data type for ", dtype_name(t),
              " (float32, float64, float16 and bfloat16 only)");
}

TensorDescriptor::TensorDescriptor() {
  EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_), "creating a tensor descriptor");
}
TensorDescriptor::~TensorDescriptor() {
  cudnnDestroyTensorDescriptor(d_);
}
void TensorDescriptor::set_nchw(DType t, int64_t n, int64_t c, int64_t h, int64_t w) {
  EMBER_CUDNN_CHECK(
      cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, data_type(t), as_int(n), as_int(c),
                                 as_int(h), as_int(w)),
      ::ember::detail::str_cat("describing a ", n, "x", c, "x", h, "x", w, " tensor"));
}

// Note [cuDNN's deprecated calls]: ops/cudnn is compiled with CUDNN_WARN_DEPRECATED and
// -Werror=deprecated-declarations, so every call cuDNN 9 marks deprecated fails the build
// (CMakeLists.txt) unless it is in a region like this one. This is the one
// place they are allowed: the legacy convolution API, which NVIDIA keeps (forward compatible)
// but no longer develops, and which the classic algorithms (cudnn_v7:*) need. Used here:
// cudnnCreate/Destroy/SetFilter4dDescriptor, cudnnCreate/Destroy/SetConvolution2dDescriptor,
// cudnnSetConvolutionGroupCount, cudnnSetConvolutionMathType and
// cudnnGetConvolution2dForwardOutputDim. Tensor descriptors are not deprecated.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

FilterDescriptor::FilterDescriptor() {
  EMBER_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_), "creating a filter descriptor");
}
FilterDescriptor::~FilterDescriptor() {
  cudnnDestroyFilterDescriptor(d_);
}
void FilterDescriptor::set_kcrs(DType t, int64_t k, int64_t c, int64_t r, int64_t s) {
  EMBER_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d_, data_type(t), CUDNN_TENSOR_NCHW, as_int(k),
                                               as_int(c), as_int(r), as_int(s)),
                    ::ember::detail::str_cat("describing ", k, "x", c, "x", r, "x", s, " filters"));
}

ConvolutionDescriptor::ConvolutionDescriptor() {
  EMBER_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d_), "creating a convolution descriptor");
}
ConvolutionDescriptor::~ConvolutionDescriptor() {
  cudnnDestroyConvolutionDescriptor(d_);
}
void ConvolutionDescriptor::set(const kernels::ConvShape& s, DType t, bool allow_tf32) {
  const cudnnDataType_t compute =
      t == DType::f16 || t == DType::bf16 ? CUDNN_DATA_FLOAT : data_type(t);
  const std::string what = ::ember::detail::str_cat(
      "describing a convolution of stride ", s.stride_h, "x", s.stride_w, ", padding ", s.pad_h,
      "x", s.pad_w, ", dilation ", s.dil_h, "x", s.dil_w, ", groups ", s.groups);
  EMBER_CUDNN_CHECK(
      cudnnSetConvolution2dDescriptor(d_, as_int(s.pad_h), as_int(s.pad_w), as_int(s.stride_h),
                                      as_int(s.stride_w), as_int(s.dil_h), as_int(s.dil_w),
                                      CUDNN_CROSS_CORRELATION, compute),
      what);
  EMBER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d_, as_int(s.groups)), what);
  // FMA: plain float32 arithmetic; DEFAULT lets Ampere and later convert to TF32.
  const cudnnMathType_t math = t == DType::f16 || t == DType::bf16 ? CUDNN_TENSOR_OP_MATH
                               : allow_tf32                        ? CUDNN_DEFAULT_MATH
                                                                   : CUDNN_FMA_MATH;
  EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(d_, math), what);
}

ConvDescriptors::ConvDescriptors(const kernels::ConvShape& s, DType t, bool allow_tf32) {
  if (const char* why = conv_refusal(s)) EMBER_THROW(CudnnError, why);
  x.set_nchw(t, s.n, s.c, s.h, s.w);
  w.set_kcrs(t, s.k, s.cg(), s.r, s.s);
  y.set_nchw(t, s.n, s.k, s.oh, s.ow);
  conv.set(s, t, allow_tf32);
}

std::array<int64_t, 4> output_dims(const kernels::ConvShape& s, DType t) {
  if (const char* why = conv_refusal(s)) EMBER_THROW(CudnnError, why);
  TensorDescriptor x;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  x.set_nchw(t, s.n, s.c, s.h, s.w);
  w.set_kcrs(t, s.k, s.cg(), s.r, s.s);
  conv.set(s, t, false);
  int n = 0, c = 0, h = 0, wd = 0;
  EMBER_CUDNN_CHECK(
      cudnnGetConvolution2dForwardOutputDim(conv.get(), x.get(), w.get(), &n, &c, &h, &wd),
      "computing a convolution's output size");
  return {n, c, h, wd};
}

#pragma GCC diagnostic pop

}  // namespace ember::ops::cudnn

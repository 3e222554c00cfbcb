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

void TensorDescriptor::set_nchw(DType t, int64_t n, int64_t c, int64_t h, int64_t w) {
  EMBER_CUDNN_CHECK(
      cudnnSetTensor4dDescriptor(get(), CUDNN_TENSOR_NCHW, data_type(t), as_int(n), as_int(c),
                                 as_int(h), as_int(w)),
      ::ember::detail::str_cat("describing a ", n, "x", c, "x", h, "x", w, " tensor"));
}

// Note [cuDNN's deprecated calls]: ops/cudnn is compiled with CUDNN_WARN_DEPRECATED and
// -Werror=deprecated-declarations, so every call cuDNN 9 marks deprecated fails the build
// (CMakeLists.txt) unless it is in a region like this one: here, and the activation
// descriptor's calls in ops/cudnn/pointwise.cpp (cudnnSetActivationDescriptor,
// cudnnSetActivationDescriptorSwishBeta, cudnnActivationForward/Backward). Here they are the legacy
// convolution API, which NVIDIA keeps (forward compatible) but no longer develops, and which the
// classic algorithms (cudnn_v7:*) need. Used here: cudnnCreate/Destroy/SetFilter4dDescriptor,
// cudnnCreate/DestroyPoolingDescriptor and cudnnCreate/DestroyActivationDescriptor (their
// owners' instantiations),
// cudnnCreate/Destroy/SetConvolution2dDescriptor, cudnnSetConvolutionGroupCount,
// cudnnSetConvolutionMathType, cudnnGetConvolution2dForwardOutputDim,
// cudnnGetConvolution{Forward,BackwardData, BackwardFilter}Algorithm_v7,
// cudnnFindConvolution{Forward,BackwardData,BackwardFilter}AlgorithmEx,
// cudnnConvolution{Forward,BackwardData,BackwardFilter} and their *AlgoPerf_t types,
// cudnnAddTensor (the bias of a convolution whose algorithm leaves it out), and the
// graph API's CUDNN_ATTR_EXECUTION_PLAN_HANDLE (a plan made from a device description alone
// inspects, but a plan that runs is still made with its handle). Tensor descriptors are not
// deprecated.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// Every descriptor's owner (OwnedDescriptor in descriptors.h), defined in this region since most
// of its Create/Destroy pairs are deprecated: the tensor's and the convolution's used here, the
// pooling's (ops/cudnn/pool_norm.cpp) and the activation's (ops/cudnn/pointwise.cpp).
template <typename D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
OwnedDescriptor<D, Create, Destroy>::OwnedDescriptor(const char* what) {
  EMBER_CUDNN_CHECK(Create(&d_), what);
}
template <typename D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
OwnedDescriptor<D, Create, Destroy>::~OwnedDescriptor() {
  Destroy(d_);
}
template class OwnedDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                               cudnnDestroyTensorDescriptor>;
template class OwnedDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                               cudnnDestroyFilterDescriptor>;
template class OwnedDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                               cudnnDestroyConvolutionDescriptor>;
template class OwnedDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                               cudnnDestroyPoolingDescriptor>;
template class OwnedDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                               cudnnDestroyActivationDescriptor>;

void FilterDescriptor::set_kcrs(DType t, int64_t k, int64_t c, int64_t r, int64_t s) {
  EMBER_CUDNN_CHECK(cudnnSetFilter4dDescriptor(get(), data_type(t), CUDNN_TENSOR_NCHW, as_int(k),
                                               as_int(c), as_int(r), as_int(s)),
                    ::ember::detail::str_cat("describing ", k, "x", c, "x", r, "x", s, " filters"));
}

void ConvolutionDescriptor::set(const kernels::ConvShape& s, DType t, bool allow_tf32) {
  const cudnnDataType_t compute =
      t == DType::f16 || t == DType::bf16 ? CUDNN_DATA_FLOAT : data_type(t);
  const std::string what = ::ember::detail::str_cat(
      "describing a convolution of stride ", s.stride_h, "x", s.stride_w, ", padding ", s.pad_h,
      "x", s.pad_w, ", dilation ", s.dil_h, "x", s.dil_w, ", groups ", s.groups);
  EMBER_CUDNN_CHECK(
      cudnnSetConvolution2dDescriptor(get(), as_int(s.pad_h), as_int(s.pad_w), as_int(s.stride_h),
                                      as_int(s.stride_w), as_int(s.dil_h), as_int(s.dil_w),
                                      CUDNN_CROSS_CORRELATION, compute),
      what);
  EMBER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(get(), as_int(s.groups)), what);
  // FMA: plain float32 arithmetic; DEFAULT lets Ampere and later convert to TF32.
  const cudnnMathType_t math = t == DType::f16 || t == DType::bf16 ? CUDNN_TENSOR_OP_MATH
                               : allow_tf32                        ? CUDNN_DEFAULT_MATH
                                                                   : CUDNN_FMA_MATH;
  EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(get(), math), what);
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

const cudnnBackendAttributeName_t kExecutionPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;

std::string legacy_algo_name(ConvDirection d, int algo) {
  static const char* const fwd[] = {
      "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
      "winograd",      "winograd_nonfused"};
  static const char* const data[] = {"algo_0",     "algo_1",   "fft",
                                     "fft_tiling", "winograd", "winograd_nonfused"};
  static const char* const filter[] = {
      "algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling"};
  auto pick = [&](const char* const* names, int n) {
    return algo >= 0 && algo < n ? std::string(names[algo]) : "algo_" + std::to_string(algo);
  };
  switch (d) {
    case ConvDirection::forward:
      return pick(fwd, 8);
    case ConvDirection::backward_data:
      return pick(data, 6);
    default:
      return pick(filter, 7);
  }
}

const char* math_type_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor_op_allow_conversion";
    case CUDNN_FMA_MATH:
      return "fma";
  }
  return "unknown";
}

namespace {

template <typename Perf>
std::vector<LegacyAlgo> legacy_results(const Perf* perf, int n) {
  std::vector<LegacyAlgo> out;
  for (int i = 0; i < n; ++i)
    out.push_back({static_cast<int>(perf[i].algo), perf[i].status, perf[i].time, perf[i].memory,
                   perf[i].determinism == CUDNN_DETERMINISTIC, perf[i].mathType});
  return out;
}

std::string legacy_what(const char* call, const kernels::ConvShape& s) {
  return ::ember::detail::str_cat(call, " for N", s.n, " C", s.c, " H", s.h, " W", s.w, " K", s.k,
                                  " R", s.r, " S", s.s, " stride ", s.stride_h, " pad ", s.pad_h,
                                  " dil ", s.dil_h, " groups ", s.groups);
}

}  // namespace

std::vector<LegacyAlgo> legacy_heuristic(cudnnHandle_t h, ConvDirection d,
                                         const kernels::ConvShape& s, DType t, bool allow_tf32) {
  EMBER_CHECK_T(CudnnError, h != nullptr, "cuDNN's v7 heuristic needs a handle");
  ConvDescriptors c(s, t, allow_tf32);
  const std::string what = legacy_what("the v7 heuristic", s);
  int n = 0;
  switch (d) {
    case ConvDirection::forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      EMBER_CUDNN_CHECK(
          cudnnGetConvolutionForwardAlgorithm_v7(h, c.x.get(), c.w.get(), c.conv.get(), c.y.get(),
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf),
          what);
      return legacy_results(perf, n);
    }
    case ConvDirection::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                            h, c.w.get(), c.y.get(), c.conv.get(), c.x.get(),
                            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf),
                        what);
      return legacy_results(perf, n);
    }
    default: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                            h, c.x.get(), c.y.get(), c.conv.get(), c.w.get(),
                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf),
                        what);
      return legacy_results(perf, n);
    }
  }
}

std::vector<LegacyAlgo> legacy_find(cudnnHandle_t h, ConvDirection d, const kernels::ConvShape& s,
                                    DType t, bool allow_tf32, const void* a, const void* b,
                                    void* out, void* workspace, size_t workspace_bytes) {
  EMBER_CHECK_T(CudnnError, h != nullptr, "cuDNN's FindEx needs a handle");
  ConvDescriptors c(s, t, allow_tf32);
  const std::string what = legacy_what("FindEx", s);
  int n = 0;
  switch (d) {
    case ConvDirection::forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      EMBER_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
                            h, c.x.get(), a, c.w.get(), b, c.conv.get(), c.y.get(), out,
                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, workspace, workspace_bytes),
                        what);
      return legacy_results(perf, n);
    }
    case ConvDirection::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      EMBER_CUDNN_CHECK(
          cudnnFindConvolutionBackwardDataAlgorithmEx(
              h, c.w.get(), b, c.y.get(), a, c.conv.get(), c.x.get(), out,
              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, workspace, workspace_bytes),
          what);
      return legacy_results(perf, n);
    }
    default: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      EMBER_CUDNN_CHECK(
          cudnnFindConvolutionBackwardFilterAlgorithmEx(
              h, c.x.get(), b, c.y.get(), a, c.conv.get(), c.w.get(), out,
              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, workspace, workspace_bytes),
          what);
      return legacy_results(perf, n);
    }
  }
}

void legacy_run(cudnnHandle_t h, ConvDirection d, const kernels::ConvShape& s, DType t,
                const LegacyAlgo& algo, const void* a, const void* b, void* out, void* workspace,
                size_t workspace_bytes) {
  ConvDescriptors c(s, t, /*allow_tf32=*/false);
  const std::string what = legacy_what(legacy_algo_name(d, algo.algo).c_str(), s);
  EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), algo.math), what);
  const double one64 = 1, zero64 = 0;
  const float one32 = 1, zero32 = 0;
  const void* alpha = t == DType::f64 ? static_cast<const void*>(&one64) : &one32;
  const void* beta = t == DType::f64 ? static_cast<const void*>(&zero64) : &zero32;
  switch (d) {
    case ConvDirection::forward:
      EMBER_CUDNN_CHECK(cudnnConvolutionForward(h, alpha, c.x.get(), a, c.w.get(), b, c.conv.get(),
                                                static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo),
                                                workspace, workspace_bytes, beta, c.y.get(), out),
                        what);
      return;
    case ConvDirection::backward_data:
      EMBER_CUDNN_CHECK(
          cudnnConvolutionBackwardData(h, alpha, c.w.get(), b, c.y.get(), a, c.conv.get(),
                                       static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo),
                                       workspace, workspace_bytes, beta, c.x.get(), out),
          what);
      return;
    default:
      EMBER_CUDNN_CHECK(
          cudnnConvolutionBackwardFilter(h, alpha, c.x.get(), b, c.y.get(), a, c.conv.get(),
                                         static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo),
                                         workspace, workspace_bytes, beta, c.w.get(), out),
          what);
      return;
  }
}

void add_bias(cudnnHandle_t h, const kernels::ConvShape& s, DType t, const void* bias, void* y) {
  TensorDescriptor b, out;
  b.set_nchw(t, 1, s.k, 1, 1);
  out.set_nchw(t, s.n, s.k, s.oh, s.ow);
  const double one64 = 1;
  const float one32 = 1;
  const void* one = t == DType::f64 ? static_cast<const void*>(&one64) : &one32;
  EMBER_CUDNN_CHECK(cudnnAddTensor(h, one, b.get(), bias, one, out.get(), y),
                    legacy_what("adding the bias", s));
}

#pragma GCC diagnostic pop

}  // namespace ember::ops::cudnn

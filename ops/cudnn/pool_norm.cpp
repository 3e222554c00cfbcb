// Pooling and batch norm on cuDNN (ops/cudnn/pool_norm.h).
#include "ops/cudnn/pool_norm.h"

#include <string>

#include "ops/cudnn/descriptors.h"
#include "ops/dispatch.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace ember::ops::cudnn {
namespace {

std::string pool_what(const char* call, const kernels::PoolShape& s) {
  return ::ember::detail::str_cat(call, " on ", s.n, "x", s.c, "x", s.h, "x", s.w, " (window ",
                                  s.kh, "x", s.kw, ", stride ", s.sh, "x", s.sw, ", padding ", s.ph,
                                  "x", s.pw, ")");
}

std::string bn_what(const char* call, const BatchNormCall& c) {
  return ::ember::detail::str_cat(call, " on ", c.s.n, "x", c.s.c, "x", c.s.s, " (eps ", c.eps,
                                  ")");
}

// cuDNN's output size for one dim: floor((in + 2 pad - window) / stride) + 1.
int64_t floor_size(int64_t in, int64_t window, int64_t pad, int64_t stride) {
  return (in + 2 * pad - window) / stride + 1;
}

}  // namespace

const char* pool_refusal(PoolKind k, const kernels::PoolShape& s) {
  if (s.dh != 1 || s.dw != 1) return "cuDNN's pooling has no dilation";
  if (k == PoolKind::avg && s.divisor_override > 0)
    return "cuDNN's pooling has no divisor_override";
  for (int64_t v : {s.n, s.c, s.h, s.w, s.kh, s.kw, s.sh, s.sw, s.oh, s.ow})
    if (!fits_int(v)) return "a size beyond cuDNN's int descriptors";
  if (s.n * s.c * s.h * s.w > INT32_MAX || s.n * s.c * s.oh * s.ow > INT32_MAX)
    return "a tensor of 2^31 elements or more";
  if (floor_size(s.h, s.kh, s.ph, s.sh) != s.oh || floor_size(s.w, s.kw, s.pw, s.sw) != s.ow)
    return "ceil_mode adds a window that cuDNN's (floor) output sizes lack";
  return nullptr;
}

const char* batch_norm_refusal(const BatchNormCall& c) {
  if (c.t != DType::f32 && c.t != DType::f64)
    return "cuDNN's batch norm here takes float32 or float64";
  if (!fits_int(c.s.n) || !fits_int(c.s.c) || !fits_int(c.s.s) || c.s.n * c.s.c * c.s.s > INT32_MAX)
    return "a tensor of 2^31 elements or more";
  if (!(c.eps >= CUDNN_BN_MIN_EPSILON)) return "eps below CUDNN_BN_MIN_EPSILON";
  return nullptr;
}

// Pooling and batch norm descriptors and calls are deprecated in cuDNN 9, with the rest of its
// legacy ops (Note [cuDNN's deprecated calls] in descriptors.cpp): cudnnCreate/Set/Destroy
// PoolingDescriptor, cudnnPoolingForward/Backward, cudnnDeriveBNTensorDescriptor, and
// cudnnBatchNormalizationForwardInference, ...ForwardTrainingEx, ...BackwardEx with their
// workspace and reserve-space queries.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

class PoolingDescriptor
    : public OwnedDescriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                             cudnnDestroyPoolingDescriptor> {
 public:
  PoolingDescriptor(PoolKind k, const kernels::PoolShape& s)
      : OwnedDescriptor("creating a pooling descriptor") {
    const cudnnPoolingMode_t mode = k == PoolKind::max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                    : s.count_include_pad
                                        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    EMBER_CUDNN_CHECK(cudnnSetPooling2dDescriptor(get(), mode, CUDNN_PROPAGATE_NAN,
                                                  static_cast<int>(s.kh), static_cast<int>(s.kw),
                                                  static_cast<int>(s.ph), static_cast<int>(s.pw),
                                                  static_cast<int>(s.sh), static_cast<int>(s.sw)),
                      pool_what("describing pooling", s));
  }
};

// x's and y's descriptors and the pooling's.
struct PoolDescriptors {
  TensorDescriptor x, y;
  PoolingDescriptor pool;
  PoolDescriptors(PoolKind k, DType t, const kernels::PoolShape& s) : pool(k, s) {
    if (const char* why = pool_refusal(k, s))
      EMBER_THROW(CudnnError, pool_what("pooling", s), ": ", why);
    x.set_nchw(t, s.n, s.c, s.h, s.w);
    y.set_nchw(t, s.n, s.c, s.oh, s.ow);
  }
};

}  // namespace

void pooling_forward(cudnnHandle_t h, PoolKind k, DType t, const kernels::PoolShape& s,
                     const void* x, void* y) {
  PoolDescriptors d(k, t, s);
  const Scale a(t);
  EMBER_CUDNN_CHECK(cudnnPoolingForward(h, d.pool.get(), a.one, d.x.get(), x, a.zero, d.y.get(), y),
                    pool_what("cudnnPoolingForward", s));
}

void pooling_backward(cudnnHandle_t h, PoolKind k, DType t, const kernels::PoolShape& s,
                      const void* x, const void* y, const void* dy, void* dx) {
  PoolDescriptors d(k, t, s);
  const Scale a(t);
  EMBER_CUDNN_CHECK(cudnnPoolingBackward(h, d.pool.get(), a.one, d.y.get(), y, d.y.get(), dy,
                                         d.x.get(), x, a.zero, d.x.get(), dx),
                    pool_what("cudnnPoolingBackward", s));
}

namespace {

// x's descriptor (n x c x s x 1) and the per-channel parameters' one, derived from it.
struct BatchNormDescriptors {
  TensorDescriptor x, param;
  cudnnBatchNormMode_t mode;
  explicit BatchNormDescriptors(const BatchNormCall& c)
      : mode(c.persistent ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT : CUDNN_BATCHNORM_SPATIAL) {
    if (const char* why = batch_norm_refusal(c))
      EMBER_THROW(CudnnError, bn_what("batch norm", c), ": ", why);
    x.set_nchw(c.t, c.s.n, c.s.c, c.s.s, 1);
    EMBER_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(param.get(), x.get(), mode),
                      bn_what("cudnnDeriveBNTensorDescriptor", c));
  }
};

}  // namespace

size_t batch_norm_reserve_bytes(cudnnHandle_t h, const BatchNormCall& c) {
  BatchNormDescriptors d(c);
  size_t bytes = 0;
  EMBER_CUDNN_CHECK(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
                        h, d.mode, CUDNN_BATCHNORM_OPS_BN, nullptr, d.x.get(), &bytes),
                    bn_what("cudnnGetBatchNormalizationTrainingExReserveSpaceSize", c));
  return bytes;
}

void batch_norm_forward_training(cudnnHandle_t h, int device, const BatchNormCall& c,
                                 double momentum, const void* x, const void* w, const void* b,
                                 void* running_mean, void* running_var, void* y, void* save_mean,
                                 void* save_invstd, void* reserve, size_t reserve_bytes) {
  BatchNormDescriptors d(c);
  size_t bytes = 0;
  EMBER_CUDNN_CHECK(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
                        h, d.mode, CUDNN_BATCHNORM_OPS_BN, d.x.get(), nullptr, d.x.get(),
                        d.param.get(), nullptr, &bytes),
                    bn_what("cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize", c));
  const DataPtr ws = workspace(Device(DeviceType::CUDA, device), bytes);
  const Scale a(c.t);
  EMBER_CUDNN_CHECK(
      cudnnBatchNormalizationForwardTrainingEx(
          h, d.mode, CUDNN_BATCHNORM_OPS_BN, a.one, a.zero, d.x.get(), x, nullptr, nullptr,
          d.x.get(), y, d.param.get(), w, b, momentum, running_mean, running_var, c.eps, save_mean,
          save_invstd, nullptr, ws.get(), bytes, reserve, reserve_bytes),
      bn_what("cudnnBatchNormalizationForwardTrainingEx", c));
}

void batch_norm_forward_inference(cudnnHandle_t h, const BatchNormCall& c, const void* x,
                                  const void* w, const void* b, const void* running_mean,
                                  const void* running_var, void* y) {
  BatchNormCall spatial = c;
  spatial.persistent = false;  // inference has no persistent mode
  BatchNormDescriptors d(spatial);
  const Scale a(c.t);
  EMBER_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(h, d.mode, a.one, a.zero, d.x.get(), x,
                                                            d.x.get(), y, d.param.get(), w, b,
                                                            running_mean, running_var, c.eps),
                    bn_what("cudnnBatchNormalizationForwardInference", c));
}

void batch_norm_backward(cudnnHandle_t h, int device, const BatchNormCall& c, const void* x,
                         const void* dy, const void* w, const void* save_mean,
                         const void* save_invstd, void* dx, void* dw, void* db, void* reserve,
                         size_t reserve_bytes) {
  BatchNormDescriptors d(c);
  size_t bytes = 0;
  EMBER_CUDNN_CHECK(cudnnGetBatchNormalizationBackwardExWorkspaceSize(
                        h, d.mode, CUDNN_BATCHNORM_OPS_BN, d.x.get(), nullptr, d.x.get(), nullptr,
                        d.x.get(), d.param.get(), nullptr, &bytes),
                    bn_what("cudnnGetBatchNormalizationBackwardExWorkspaceSize", c));
  const DataPtr ws = workspace(Device(DeviceType::CUDA, device), bytes);
  const Scale a(c.t);
  EMBER_CUDNN_CHECK(cudnnBatchNormalizationBackwardEx(
                        h, d.mode, CUDNN_BATCHNORM_OPS_BN, a.one, a.zero, a.one, a.zero, d.x.get(),
                        x, nullptr, nullptr, d.x.get(), dy, nullptr, nullptr, d.x.get(), dx,
                        d.param.get(), w, nullptr, dw, db, c.eps, save_mean, save_invstd, nullptr,
                        ws.get(), bytes, reserve, reserve_bytes),
                    bn_what("cudnnBatchNormalizationBackwardEx", c));
}

#pragma GCC diagnostic pop

}  // namespace ember::ops::cudnn

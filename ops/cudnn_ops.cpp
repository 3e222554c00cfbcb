// Activations and softmax on cuDNN where it serves (ops/cudnn_ops.h).
#include "ops/cudnn_ops.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "ember/build_config.h"
#include "ops/conv2d_cudnn.h"
#include "runtime/gpu.h"

#include "ops/dispatch.h"
#include "runtime/tensor.h"

#if EMBER_HAVE_CUDNN
#include "ops/cudnn/descriptors.h"
#include "ops/cudnn/graph.h"
#include "ops/cudnn/pointwise.h"
#endif

namespace ember::ops {
namespace {

const char* op_name(CudnnOp op) {
  return op == CudnnOp::activation ? "activation" : op == CudnnOp::softmax ? "softmax" : "conv2d";
}

// Says once per op, under EMBER_LOG=select, who runs it on cuda and why.
void log_once(CudnnOp op, bool on_cudnn, const std::string& why) {
  static std::atomic<bool> said[3][2] = {};
  const char* v = std::getenv("EMBER_LOG");
  if (v == nullptr || std::strstr(v, "select") == nullptr) return;
  if (said[static_cast<int>(op)][on_cudnn].exchange(true)) return;
  std::cerr << "ember select: " << op_name(op) << " on cuda -> "
            << (on_cudnn ? "cuDNN" : "Ember's kernel") << (why.empty() ? "" : " (" + why + ")")
            << "\n";
}

// Whether cuDNN may run `op` on `device` ("" in *why), or why not.
bool allowed(CudnnOp op, Device device, std::string* why) {
  if (!device.is_cuda()) return false;  // nothing to say: cuDNN is for cuda only
  if (!cudnn_enabled())
    *why = "cuDNN is off";
  else if (backend_preference(op) == BackendPreference::prefer_ember)
    *why = "prefer-ember";
  else if (!cudnn_unusable_reason().empty())
    *why = cudnn_unusable_reason();
  return why->empty();
}

// Runs `call(handle)` on cuDNN when allowed; false when not allowed or when cuDNN lacks the case.
template <typename Call>
bool run(CudnnOp op, Device device, Call&& call) {
  std::string why;
  if (!allowed(op, device, &why)) {
    if (device.is_cuda()) log_once(op, false, why);
    return false;
  }
#if EMBER_HAVE_CUDNN
  const bool ran = call(cudnn::handle(device.index, gpu::current_stream(device)));
  log_once(op, ran, ran ? "" : "a case cuDNN lacks");
  return ran;
#else
  (void)call;
  return false;
#endif
}

}  // namespace

bool cudnn_activation_forward(Device device, kernels::Activation a, kernels::ActivationParams p,
                              DType t, int64_t n, const void* x, void* y) {
#if EMBER_HAVE_CUDNN
  return run(CudnnOp::activation, device,
             [&](cudnnHandle_t h) { return cudnn::activation_forward(h, a, p, t, n, x, y); });
#else
  (void)a, (void)p, (void)t, (void)n, (void)x, (void)y;
  return run(CudnnOp::activation, device, 0);
#endif
}

bool cudnn_activation_backward(Device device, kernels::Activation a, kernels::ActivationParams p,
                               DType t, int64_t n, const void* s, const void* dy, void* dx) {
#if EMBER_HAVE_CUDNN
  return run(CudnnOp::activation, device, [&](cudnnHandle_t h) {
    return cudnn::activation_backward(h, device.index, a, p, t, n, s, dy, dx);
  });
#else
  (void)a, (void)p, (void)t, (void)n, (void)s, (void)dy, (void)dx;
  return run(CudnnOp::activation, device, 0);
#endif
}

bool cudnn_softmax_forward(Device device, bool log, DType t, const kernels::SoftmaxShape& s,
                           const void* x, void* y) {
#if EMBER_HAVE_CUDNN
  return run(CudnnOp::softmax, device,
             [&](cudnnHandle_t h) { return cudnn::softmax_forward(h, log, t, s, x, y); });
#else
  (void)log, (void)t, (void)s, (void)x, (void)y;
  return run(CudnnOp::softmax, device, 0);
#endif
}

bool cudnn_softmax_backward(Device device, bool log, DType t, const kernels::SoftmaxShape& s,
                            const void* y, const void* dy, void* dx) {
#if EMBER_HAVE_CUDNN
  return run(CudnnOp::softmax, device,
             [&](cudnnHandle_t h) { return cudnn::softmax_backward(h, log, t, s, y, dy, dx); });
#else
  (void)log, (void)t, (void)s, (void)y, (void)dy, (void)dx;
  return run(CudnnOp::softmax, device, 0);
#endif
}

bool cudnn_conv2d_bias_relu(const ConvKey& key, const void* x, const void* w, const void* bias,
                            void* y) {
  std::string why;
  if (!allowed(CudnnOp::conv2d, key.device(), &why)) return false;
#if EMBER_HAVE_CUDNN
  const Device d = key.device();
  cudnnHandle_t h = cudnn::handle(d.index, gpu::current_stream(d));
  std::shared_ptr<cudnn::ConvPlan> plan;
  try {
    plan = cudnn::thread_plans().get(key, "", h, cudnn::ConvFusion::bias_relu);
  } catch (const ConvNotSupported&) {
    return false;  // the convolution and the relu then run apart
  }
  const size_t bytes = static_cast<size_t>(plan->workspace());
  const Tensor ws = workspace(d, bytes);
  try {
    plan->execute(h, x, w, y, bytes > 0 ? ws.data_ptr() : nullptr, bytes, bias);
  } catch (const ConvNotSupported&) {
    return false;
  }
  return true;
#else
  (void)x, (void)w, (void)bias, (void)y;
  return false;
#endif
}

}  // namespace ember::ops

// Activations and softmax on cuDNN (ops/cudnn/pointwise.h).
#include "ops/cudnn/pointwise.h"

#include <climits>

#include "ops/cudnn/descriptors.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace ember::ops::cudnn {
namespace {

// hardtanh(x, 0, c) is cuDNN's clipped relu with ceiling c (relu6: c = 6).
bool is_clipped_relu(kernels::Activation a, const kernels::ActivationParams& p) {
  return a == kernels::Activation::hardtanh && p.alpha == 0.0 && p.beta > 0.0;
}

// Note [cuDNN's activations where they match]: measured on an H200 (cuDNN 9.19) against the
// float64 closed forms, cuDNN's elu on float16/bfloat16 loses up to 5% near zero (exp(x) - 1 in
// half precision), and its clipped relu's backward passes the gradient at the ceiling, where
// PyTorch's hardtanh gives zero. Those run on Ember's kernels.
bool has_cudnn_mode(kernels::Activation a, const kernels::ActivationParams& p, DType t,
                    bool backward) {
  using kernels::Activation;
  const bool half = t == kFloat16 || t == kBFloat16;
  return a == Activation::relu || a == Activation::sigmoid || a == Activation::tanh ||
         (a == Activation::elu && !half) || a == Activation::silu ||
         (is_clipped_relu(a, p) && !backward);
}

}  // namespace

// The activation descriptor and its calls are deprecated (Note [cuDNN's deprecated calls] in
// descriptors.cpp); so are cudnnActivationForward/Backward.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

class ActivationDescriptor
    : public OwnedDescriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                             cudnnDestroyActivationDescriptor> {
 public:
  ActivationDescriptor(kernels::Activation a, kernels::ActivationParams p)
      : OwnedDescriptor("creating an activation descriptor") {
    using kernels::Activation;
    const cudnnActivationMode_t mode = a == Activation::relu      ? CUDNN_ACTIVATION_RELU
                                       : a == Activation::sigmoid ? CUDNN_ACTIVATION_SIGMOID
                                       : a == Activation::tanh    ? CUDNN_ACTIVATION_TANH
                                       : a == Activation::elu     ? CUDNN_ACTIVATION_ELU
                                       : a == Activation::silu    ? CUDNN_ACTIVATION_SWISH
                                                                  : CUDNN_ACTIVATION_CLIPPED_RELU;
    // coef: elu's alpha, clipped relu's ceiling; swish's beta is set apart.
    const double coef = a == Activation::elu ? p.alpha : a == Activation::hardtanh ? p.beta : 0.0;
    EMBER_CUDNN_CHECK(cudnnSetActivationDescriptor(get(), mode, CUDNN_PROPAGATE_NAN, coef),
                      "describing an activation");
    if (a == Activation::silu)
      EMBER_CUDNN_CHECK(cudnnSetActivationDescriptorSwishBeta(get(), 1.0), "describing silu");
  }
};

}  // namespace

bool activation_forward(cudnnHandle_t h, kernels::Activation a, kernels::ActivationParams p,
                        DType t, int64_t n, const void* x, void* y) {
  if (!has_cudnn_mode(a, p, t, false) || !fits_int(n)) return false;
  ActivationDescriptor act(a, p);
  TensorDescriptor d;
  d.set_nchw(t, n, 1, 1, 1);
  const Scale k(t);
  EMBER_CUDNN_CHECK(cudnnActivationForward(h, act.get(), k.one, d.get(), x, k.zero, d.get(), y),
                    "cudnnActivationForward on " + std::to_string(n) + " elements");
  return true;
}

bool activation_backward(cudnnHandle_t h, int device, kernels::Activation a,
                         kernels::ActivationParams p, DType t, int64_t n, const void* s,
                         const void* dy, void* dx) {
  if (!has_cudnn_mode(a, p, t, true) || !fits_int(n)) return false;
  ActivationDescriptor act(a, p);
  TensorDescriptor d;
  d.set_nchw(t, n, 1, 1, 1);
  const Scale k(t);
  const void* x = s;
  const void* y = s;
  Tensor recomputed;
  if (a == kernels::Activation::elu || a == kernels::Activation::silu) {
    // Ember keeps the input; cuDNN's backward reads the output too.
    recomputed = empty({n}, {t, Device(DeviceType::CUDA, device)});
    EMBER_CUDNN_CHECK(cudnnActivationForward(h, act.get(), k.one, d.get(), s, k.zero, d.get(),
                                             recomputed.data_ptr()),
                      "cudnnActivationForward (for the backward) on " + std::to_string(n));
    y = recomputed.data_ptr();
  }
  EMBER_CUDNN_CHECK(cudnnActivationBackward(h, act.get(), k.one, d.get(), y, d.get(), dy, d.get(),
                                            x, k.zero, d.get(), dx),
                    "cudnnActivationBackward on " + std::to_string(n) + " elements");
  return true;
}

#pragma GCC diagnostic pop

namespace {

// outer x dim x inner x 1, NCHW: cuDNN's channel mode normalises over C.
bool describe(TensorDescriptor& d, DType t, const kernels::SoftmaxShape& s) {
  if (!fits_int(s.outer) || !fits_int(s.dim) || !fits_int(s.inner) ||
      s.outer * s.dim * s.inner > int64_t{INT_MAX})
    return false;
  d.set_nchw(t, s.outer, s.dim, s.inner, 1);
  return true;
}

}  // namespace

bool softmax_backward(cudnnHandle_t h, bool log, DType t, const kernels::SoftmaxShape& s,
                      const void* y, const void* dy, void* dx) {
  TensorDescriptor d;
  if (!describe(d, t, s)) return false;
  const Scale k(t);
  EMBER_CUDNN_CHECK(cudnnSoftmaxBackward(h, log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                         CUDNN_SOFTMAX_MODE_CHANNEL, k.one, d.get(), y, d.get(), dy,
                                         k.zero, d.get(), dx),
                    "cudnnSoftmaxBackward");
  return true;
}

}  // namespace ember::ops::cudnn

// Activations: checks, output allocation, then the device's activation kernels
// (kernels/activation_math.h) on contiguous data.
#include "ops/activation.h"

#include "ops/checks.h"
#include "ops/cudnn_ops.h"
#include "ops/dispatch.h"

namespace ember::ops {

using kernels::Activation;

namespace {

// in_place: y is x_in itself, which must be contiguous.
Tensor forward(Activation a, const char* op, const Tensor& x_in, kernels::ActivationParams p = {},
               bool in_place = false) {
  check_floating(op, x_in);
  EMBER_CHECK_VALUE(!in_place || x_in.is_contiguous(), op,
                    ": expected a contiguous tensor to write in place, got strides ",
                    x_in.strides(), " for shape ", x_in.shape());
  const Tensor x = x_in.contiguous();
  const Device dev = x.device();
  Tensor y = in_place ? x : empty(x.shape(), {x.dtype(), dev});
  if (y.numel() == 0) return y;
  run_activation_forward(dev, a, p, x.dtype(), y.numel(), x.data_ptr(), y.data_ptr(), [&](bool) {
    kernels_for(dev).activation_fwd(a, x.dtype(), p, y.numel(), x.data_ptr(), y.data_ptr(),
                                    stream_of(dev));
  });
  return y;
}

Tensor backward(Activation a, const char* op, const Tensor& g_in, const Tensor& s_in,
                kernels::ActivationParams p = {}) {
  check_floating(op, s_in);
  const Device dev = check_same_device(op, {&s_in, &g_in});
  EMBER_CHECK_SHAPE(g_in.shape() == s_in.shape(), op, ": expected grad_out of shape ", s_in.shape(),
                    ", got ", g_in.shape());
  EMBER_CHECK_DTYPE(g_in.dtype() == s_in.dtype(), op, ": expected grad_out of dtype ", s_in.dtype(),
                    ", got ", g_in.dtype());
  const Tensor s = s_in.contiguous(), g = g_in.contiguous();
  Tensor dx = empty(s.shape(), {s.dtype(), dev});
  if (dx.numel() == 0) return dx;
  run_activation_backward(
      dev, a, p, s.dtype(), dx.numel(), s.data_ptr(), g.data_ptr(), dx.data_ptr(), [&](bool) {
        kernels_for(dev).activation_bwd(a, s.dtype(), p, dx.numel(), s.data_ptr(), g.data_ptr(),
                                        dx.data_ptr(), stream_of(dev));
      });
  return dx;
}

kernels::ActivationParams alpha(double a) {
  kernels::ActivationParams p;
  p.alpha = a;
  return p;
}

kernels::ActivationParams softplus_params(double beta, double threshold) {
  kernels::ActivationParams p;
  p.beta = beta;
  p.threshold = threshold;
  return p;
}

kernels::ActivationParams bounds(const char* op, double min_val, double max_val) {
  EMBER_CHECK_VALUE(min_val <= max_val, op, ": min_val (", min_val,
                    ") cannot be greater than max_val (", max_val, ")");
  kernels::ActivationParams p;
  p.alpha = min_val;
  p.beta = max_val;
  return p;
}

Activation gelu_kind(GeluApproximate a) {
  return a == GeluApproximate::Tanh ? Activation::gelu_tanh : Activation::gelu;
}

}  // namespace

Tensor relu(const Tensor& x) {
  return forward(Activation::relu, "relu", x);
}
Tensor relu_(const Tensor& x) {
  return forward(Activation::relu, "relu_", x, {}, /*in_place=*/true);
}
Tensor leaky_relu(const Tensor& x, double slope) {
  return forward(Activation::leaky_relu, "leaky_relu", x, alpha(slope));
}
Tensor sigmoid(const Tensor& x) {
  return forward(Activation::sigmoid, "sigmoid", x);
}
Tensor tanh(const Tensor& x) {
  return forward(Activation::tanh, "tanh", x);
}
Tensor gelu(const Tensor& x, GeluApproximate a) {
  return forward(gelu_kind(a), "gelu", x);
}
Tensor silu(const Tensor& x) {
  return forward(Activation::silu, "silu", x);
}
Tensor elu(const Tensor& x, double a) {
  return forward(Activation::elu, "elu", x, alpha(a));
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  EMBER_CHECK_VALUE(beta != 0, "softplus: expected a non-zero beta, got ", beta);
  return forward(Activation::softplus, "softplus", x, softplus_params(beta, threshold));
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  return forward(Activation::hardtanh, "hardtanh", x, bounds("hardtanh", min_val, max_val));
}

Tensor hardswish(const Tensor& x) {
  return forward(Activation::hardswish, "hardswish", x);
}
Tensor hardsigmoid(const Tensor& x) {
  return forward(Activation::hardsigmoid, "hardsigmoid", x);
}
Tensor mish(const Tensor& x) {
  return forward(Activation::mish, "mish", x);
}

Tensor relu_backward(const Tensor& g, const Tensor& x) {
  return backward(Activation::relu, "relu_backward", g, x);
}
Tensor leaky_relu_backward(const Tensor& g, const Tensor& x, double slope) {
  return backward(Activation::leaky_relu, "leaky_relu_backward", g, x, alpha(slope));
}
Tensor sigmoid_backward(const Tensor& g, const Tensor& y) {
  return backward(Activation::sigmoid, "sigmoid_backward", g, y);
}
Tensor tanh_backward(const Tensor& g, const Tensor& y) {
  return backward(Activation::tanh, "tanh_backward", g, y);
}
Tensor gelu_backward(const Tensor& g, const Tensor& x, GeluApproximate a) {
  return backward(gelu_kind(a), "gelu_backward", g, x);
}
Tensor silu_backward(const Tensor& g, const Tensor& x) {
  return backward(Activation::silu, "silu_backward", g, x);
}
Tensor elu_backward(const Tensor& g, const Tensor& x, double a) {
  return backward(Activation::elu, "elu_backward", g, x, alpha(a));
}
Tensor softplus_backward(const Tensor& g, const Tensor& x, double beta, double threshold) {
  return backward(Activation::softplus, "softplus_backward", g, x,
                  softplus_params(beta, threshold));
}

Tensor hardtanh_backward(const Tensor& g, const Tensor& x, double min_val, double max_val) {
  return backward(Activation::hardtanh, "hardtanh_backward", g, x,
                  bounds("hardtanh_backward", min_val, max_val));
}

Tensor hardswish_backward(const Tensor& g, const Tensor& x) {
  return backward(Activation::hardswish, "hardswish_backward", g, x);
}
Tensor hardsigmoid_backward(const Tensor& g, const Tensor& x) {
  return backward(Activation::hardsigmoid, "hardsigmoid_backward", g, x);
}
Tensor mish_backward(const Tensor& g, const Tensor& x) {
  return backward(Activation::mish, "mish_backward", g, x);
}

}  // namespace ember::ops

#include "autograd/activation.h"

#include <algorithm>

#include "autograd/autocast.h"
#include "autograd/elementwise.h"
#include "autograd/function.h"
#include "autograd/shape.h"

namespace ember {

using Saved = std::vector<Tensor>;
using Grads = std::vector<Tensor>;

// Saving the input (or, for sigmoid/tanh, the output) is all any of these backwards needs.
Tensor relu(const Tensor& x) {
  return record("ReluBackward", ops::relu(x), {x}, {x},
                [](const Tensor& g, const Saved& s) { return Grads{ops::relu_backward(g, s[0])}; });
}

Tensor leaky_relu(const Tensor& x, double slope) {
  return record("LeakyReluBackward", ops::leaky_relu(x, slope), {x}, {x},
                [slope](const Tensor& g, const Saved& s) {
                  return Grads{ops::leaky_relu_backward(g, s[0], slope)};
                });
}

Tensor sigmoid(const Tensor& x) {
  Tensor y = ops::sigmoid(x);
  return record("SigmoidBackward", y, {x}, {y}, [](const Tensor& g, const Saved& s) {
    return Grads{ops::sigmoid_backward(g, s[0])};
  });
}

Tensor tanh(const Tensor& x) {
  Tensor y = ops::tanh(x);
  return record("TanhBackward", y, {x}, {y},
                [](const Tensor& g, const Saved& s) { return Grads{ops::tanh_backward(g, s[0])}; });
}

Tensor gelu(const Tensor& x, GeluApproximate a) {
  return record("GeluBackward", ops::gelu(x, a), {x}, {x}, [a](const Tensor& g, const Saved& s) {
    return Grads{ops::gelu_backward(g, s[0], a)};
  });
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  EMBER_CHECK_VALUE(approximate == "none" || approximate == "tanh",
                    "gelu: expected approximate to be \"none\" or \"tanh\", got \"", approximate,
                    "\"");
  return gelu(x, approximate == "tanh" ? GeluApproximate::Tanh : GeluApproximate::None);
}

Tensor silu(const Tensor& x) {
  return record("SiluBackward", ops::silu(x), {x}, {x},
                [](const Tensor& g, const Saved& s) { return Grads{ops::silu_backward(g, s[0])}; });
}

Tensor elu(const Tensor& x, double alpha) {
  return record("EluBackward", ops::elu(x, alpha), {x}, {x},
                [alpha](const Tensor& g, const Saved& s) {
                  return Grads{ops::elu_backward(g, s[0], alpha)};
                });
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  if (autocast_applies({&x}))
    return autocast_call("softplus", {x},
                         [&](const auto& c) { return softplus(c[0], beta, threshold); });
  return record("SoftplusBackward", ops::softplus(x, beta, threshold), {x}, {x},
                [beta, threshold](const Tensor& g, const Saved& s) {
                  return Grads{ops::softplus_backward(g, s[0], beta, threshold)};
                });
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  return record("HardtanhBackward", ops::hardtanh(x, min_val, max_val), {x}, {x},
                [min_val, max_val](const Tensor& g, const Saved& s) {
                  return Grads{ops::hardtanh_backward(g, s[0], min_val, max_val)};
                });
}

Tensor relu6(const Tensor& x) {
  return hardtanh(x, 0.0, 6.0);
}

Tensor hardswish(const Tensor& x) {
  return record("HardswishBackward", ops::hardswish(x), {x}, {x},
                [](const Tensor& g, const Saved& s) {
                  return Grads{ops::hardswish_backward(g, s[0])};
                });
}

Tensor hardsigmoid(const Tensor& x) {
  return record("HardsigmoidBackward", ops::hardsigmoid(x), {x}, {x},
                [](const Tensor& g, const Saved& s) {
                  return Grads{ops::hardsigmoid_backward(g, s[0])};
                });
}

Tensor mish(const Tensor& x) {
  return record("MishBackward", ops::mish(x), {x}, {x},
                [](const Tensor& g, const Saved& s) { return Grads{ops::mish_backward(g, s[0])}; });
}

// Composed of where and mul, whose gradients are PReLU's: g where x > 0, else g * weight for x
// and g * x (summed over the broadcast) for the weight.
Tensor prelu(const Tensor& x, const Tensor& weight) {
  if (autocast_applies({&x, &weight}))
    return autocast_call("prelu", {x, weight}, [&](const auto& c) { return prelu(c[0], c[1]); });
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  EMBER_CHECK_SHAPE(weight.dim() == 1 && (weight.numel() == 1 || weight.numel() == channels),
                    "prelu: expected a weight of shape [1] or [", channels,
                    "] (the input's channels, dim 1) for an input of shape ", x.shape(), ", got ",
                    weight.shape());
  Shape ws(static_cast<size_t>(std::max<int64_t>(x.dim(), 1)), 1);
  if (x.dim() >= 2) ws[1] = weight.numel();
  const Tensor w = weight.numel() == 1 ? reshape(weight, {}) : reshape(weight, ws);
  const Tensor positive = ember::gt(x, zeros({}, {x.dtype(), x.device()}));
  return where(positive, x, mul(w, x));
}

}  // namespace ember

#include "nn/layers.h"

#include <sstream>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "autograd/softmax.h"

namespace ember::nn {

namespace {
std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

BatchNorm2d::BatchNorm2d(int64_t c, double eps_, double momentum_, bool affine, bool track)
    : num_features(c), eps(eps_), momentum(momentum_) {
  EMBER_CHECK_VALUE(c > 0, "BatchNorm2d: num_features must be positive, got ", c);
  if (affine) {
    weight = register_parameter("weight", ones({c}));
    bias = register_parameter("bias", zeros({c}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", zeros({c}));
    running_var = register_buffer("running_var", ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  EMBER_CHECK_SHAPE(x.dim() == 4 && x.shape()[1] == num_features, "BatchNorm2d(", num_features,
                    "): expected input of shape [N, ", num_features, ", H, W], got ", x.shape());
  if (folded) {
    EMBER_CHECK_VALUE(!is_training(), "BatchNorm2d(", num_features,
                      "): folded into the convolution before it by fuse_for_inference, so it "
                      "runs in eval mode only (fuse a copy of the model to keep training it)");
    return x;
  }
  const bool use_batch = is_training() || !running_mean.defined();
  if (is_training() && num_batches_tracked.defined()) {
    NoGradGuard g;
    num_batches_tracked.copy_(ember::add(num_batches_tracked, 1.0));
  }
  if (is_training() && statistics) return statistics->forward(*this, x);
  return batch_norm(x, weight, bias, running_mean, running_var, use_batch, momentum, eps);
}

std::string BatchNorm2d::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + num(eps) + ", momentum=" + num(momentum) +
         ", affine=" + (weight.defined() ? "True" : "False") +
         ", track_running_stats=" + (running_mean.defined() ? "True" : "False") +
         (folded ? ", folded" : "");
}

std::shared_ptr<Activation> ReLU() {
  return std::make_shared<Activation>("ReLU", [](const Tensor& x) { return relu(x); });
}
std::shared_ptr<Activation> LeakyReLU(double s) {
  return std::make_shared<Activation>(
      "LeakyReLU", [s](const Tensor& x) { return leaky_relu(x, s); }, "negative_slope=" + num(s));
}
std::shared_ptr<Activation> Sigmoid() {
  return std::make_shared<Activation>("Sigmoid", [](const Tensor& x) { return sigmoid(x); });
}
std::shared_ptr<Activation> Tanh() {
  return std::make_shared<Activation>("Tanh", [](const Tensor& x) { return ember::tanh(x); });
}
std::shared_ptr<Activation> GELU(GeluApproximate a) {
  return std::make_shared<Activation>(
      "GELU", [a](const Tensor& x) { return gelu(x, a); },
      a == GeluApproximate::None ? "approximate='none'" : "approximate='tanh'");
}
std::shared_ptr<Activation> SiLU() {
  return std::make_shared<Activation>("SiLU", [](const Tensor& x) { return silu(x); });
}
std::shared_ptr<Activation> ELU(double alpha) {
  return std::make_shared<Activation>(
      "ELU", [alpha](const Tensor& x) { return elu(x, alpha); }, "alpha=" + num(alpha));
}
std::shared_ptr<Activation> Softplus(double beta, double threshold) {
  return std::make_shared<Activation>(
      "Softplus", [beta, threshold](const Tensor& x) { return softplus(x, beta, threshold); },
      "beta=" + num(beta) + ", threshold=" + num(threshold));
}
std::shared_ptr<Activation> Hardtanh(double min_val, double max_val) {
  ops::hardtanh(empty({0}), min_val, max_val);  // checks the bounds now, not at the first call
  return std::make_shared<Activation>(
      "Hardtanh", [min_val, max_val](const Tensor& x) { return hardtanh(x, min_val, max_val); },
      "min_val=" + num(min_val) + ", max_val=" + num(max_val));
}
std::shared_ptr<Activation> ReLU6() {
  return std::make_shared<Activation>("ReLU6", [](const Tensor& x) { return relu6(x); });
}

std::shared_ptr<Activation> Hardswish() {
  return std::make_shared<Activation>("Hardswish", [](const Tensor& x) { return hardswish(x); });
}
std::shared_ptr<Activation> Hardsigmoid() {
  return std::make_shared<Activation>("Hardsigmoid",
                                      [](const Tensor& x) { return hardsigmoid(x); });
}
std::shared_ptr<Activation> Mish() {
  return std::make_shared<Activation>("Mish", [](const Tensor& x) { return mish(x); });
}
std::shared_ptr<Activation> Softmax2d() {
  return std::make_shared<Activation>("Softmax2d", [](const Tensor& x) {
    EMBER_CHECK_SHAPE(x.dim() == 3 || x.dim() == 4,
                      "Softmax2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got ",
                      x.shape());
    return softmax(x, -3);
  });
}

PReLU::PReLU(int64_t n, double init) : num_parameters(n) {
  EMBER_CHECK_VALUE(n >= 1, "PReLU: num_parameters must be positive, got ", n);
  weight = register_parameter("weight", full({n}, init));
}

std::string PReLU::extra_repr() const { return "num_parameters=" + std::to_string(num_parameters); }

Dropout2d::Dropout2d(double p, Generator* gen) : p_(p), gen_(gen) {
  EMBER_CHECK_VALUE(p >= 0 && p <= 1, "Dropout2d: p must be in [0, 1], got ", p);
}

std::string Dropout2d::extra_repr() const { return "p=" + num(p_); }

Dropout::Dropout(double p, Generator* gen) : p_(p), gen_(gen) {
  EMBER_CHECK_VALUE(p >= 0 && p <= 1, "Dropout: p must be in [0, 1], got ", p);
}

std::string Dropout::extra_repr() const { return "p=" + num(p_); }

}  // namespace ember::nn

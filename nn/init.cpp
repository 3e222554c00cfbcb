#include "nn/init.h"

#include <cmath>

#include "autograd/grad_mode.h"

namespace ember::nn::init {

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "conv2d" || nl == "sigmoid" || nl == "identity") return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nl == "selu") return 0.75;
  EMBER_THROW(ValueError, "calculate_gain: unknown nonlinearity '", nl,
              "' (expected linear, conv2d, sigmoid, tanh, relu, leaky_relu or selu)");
}

std::pair<int64_t, int64_t> fans(const Tensor& t) {
  EMBER_CHECK_VALUE(t.dim() >= 2, "init: fan in and fan out need a tensor with at least 2 dims, "
                    "got shape ", t.shape());
  int64_t rf = 1;
  for (int64_t d = 2; d < t.dim(); ++d) rf *= t.shape()[d];
  return {t.shape()[1] * rf, t.shape()[0] * rf};
}

Tensor& uniform_(Tensor& t, double a, double b, Generator* gen) {
  NoGradGuard g;
  return ember::uniform_(t, a, b, gen);
}
Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard g;
  return ember::normal_(t, mean, std, gen);
}
Tensor& constant_(Tensor& t, double value) {
  NoGradGuard g;
  return t.fill_(value);
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0.0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0); }

namespace {
double kaiming_std(const Tensor& t, double a, FanMode mode, const std::string& nl) {
  auto [fan_in, fan_out] = fans(t);
  int64_t fan = mode == FanMode::FanIn ? fan_in : fan_out;
  EMBER_CHECK_VALUE(fan > 0, "kaiming init: fan is 0 for shape ", t.shape());
  return calculate_gain(nl, a) / std::sqrt(static_cast<double>(fan));
}
double xavier_std(const Tensor& t, double gain) {
  auto [fan_in, fan_out] = fans(t);
  EMBER_CHECK_VALUE(fan_in + fan_out > 0, "xavier init: fans are 0 for shape ", t.shape());
  return gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
}
}  // namespace

Tensor& kaiming_uniform_(Tensor& t, double a, FanMode mode, const std::string& nl, Generator* gen) {
  double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nl);
  return init::uniform_(t, -bound, bound, gen);
}
Tensor& kaiming_normal_(Tensor& t, double a, FanMode mode, const std::string& nl, Generator* gen) {
  return init::normal_(t, 0.0, kaiming_std(t, a, mode, nl), gen);
}
Tensor& xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  double bound = std::sqrt(3.0) * xavier_std(t, gain);
  return init::uniform_(t, -bound, bound, gen);
}
Tensor& xavier_normal_(Tensor& t, double gain, Generator* gen) {
  return init::normal_(t, 0.0, xavier_std(t, gain), gen);
}

}  // namespace ember::nn::init

// Weight initialisers, in place, with PyTorch's fan and gain conventions.
//
// fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (receptive field =
// product of sizes past dim 1). requires: a floating tensor with at least 2 dims (ValueError).
#pragma once

#include <string>

#include "runtime/rng.h"

namespace ember::nn::init {

enum class FanMode { FanIn, FanOut };

// Recommended gain for a nonlinearity: "linear"/"conv2d"/"sigmoid" 1, "tanh" 5/3, "relu"
// sqrt(2), "leaky_relu" sqrt(2 / (1 + param^2)), "selu" 3/4.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
std::pair<int64_t, int64_t> fans(const Tensor& t);

Tensor& uniform_(Tensor& t, double a, double b, Generator* gen = nullptr);
Tensor& normal_(Tensor& t, double mean, double std, Generator* gen = nullptr);
Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
// bound = gain * sqrt(3 / fan); gain from (nonlinearity, a).
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, FanMode mode = FanMode::FanIn,
                         const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
Tensor& kaiming_normal_(Tensor& t, double a = 0.0, FanMode mode = FanMode::FanIn,
                        const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);
Tensor& xavier_uniform_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
Tensor& xavier_normal_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);

}  // namespace ember::nn::init

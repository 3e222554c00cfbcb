// Differentiable activations (definitions and requirements in ops/activation.h).
#pragma once

#include <string>

#include "ops/activation.h"
#include "runtime/tensor.h"

namespace ember {

Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor gelu(const Tensor& x, GeluApproximate approximate = GeluApproximate::None);
// approximate: "none" or "tanh" (ValueError otherwise), as torch.nn.functional.gelu.
Tensor gelu(const Tensor& x, const std::string& approximate);
Tensor silu(const Tensor& x);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
Tensor relu6(const Tensor& x);  // hardtanh(x, 0, 6)
Tensor hardswish(const Tensor& x);
Tensor hardsigmoid(const Tensor& x);
Tensor mish(const Tensor& x);
// x > 0 ? x : weight * x, weight one value ([1]) or one per channel ([C], C = x.size(1)):
// torch.nn.functional.prelu. Differentiable w.r.t. x and weight. requires: weight 1-D of 1 or C
// elements (ShapeError naming both shapes). Half precision under autocast (PyTorch's policy).
Tensor prelu(const Tensor& x, const Tensor& weight);

}  // namespace ember

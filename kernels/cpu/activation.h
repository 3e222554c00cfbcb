// CPU kernels for pointwise activations and their derivatives, on n contiguous elements.
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace ember::kernels::cpu {

enum class Activation : uint8_t {
  relu,
  leaky_relu,
  sigmoid,
  tanh,
  gelu,
  gelu_tanh,
  silu,
  elu,
  softplus
};

// alpha: leaky_relu's negative slope, elu's alpha. beta, threshold: softplus's.
struct ActivationParams {
  double alpha = 0.0, beta = 1.0, threshold = 20.0;
};

// sigmoid and tanh differentiate from their output; every other activation from its input.
inline bool backward_uses_output(Activation a) {
  return a == Activation::sigmoid || a == Activation::tanh;
}

// y = act(x). requires: t is f32 or f64 (DTypeError otherwise); y may alias x.
void activation_fwd_cpu(Activation act, DType t, const ActivationParams& p, int64_t n,
                        const void* x, void* y);
// dx = dy * act'(.), where `saved` is y for sigmoid/tanh and x otherwise. dx may alias dy.
void activation_bwd_cpu(Activation act, DType t, const ActivationParams& p, int64_t n,
                        const void* saved, const void* dy, void* dx);

}  // namespace ember::kernels::cpu

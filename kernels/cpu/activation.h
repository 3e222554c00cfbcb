// CPU kernels for pointwise activations and their derivatives, on n contiguous elements.
#pragma once

#include <cstdint>

#include "kernels/activation_math.h"
#include "runtime/dtype.h"

namespace ember::kernels::cpu {

// The activation kinds, their parameters and formulas are kernels/activation_math.h's, which the
// GPU kernels share.
using kernels::Activation;
using kernels::ActivationParams;
using kernels::backward_uses_output;

// y = act(x). requires: t is f32 or f64 (DTypeError otherwise); y may alias x.
void activation_fwd_cpu(Activation act, DType t, const ActivationParams& p, int64_t n,
                        const void* x, void* y);
// dx = dy * act'(.), where `saved` is y for sigmoid/tanh and x otherwise. dx may alias dy.
void activation_bwd_cpu(Activation act, DType t, const ActivationParams& p, int64_t n,
                        const void* saved, const void* dy, void* dx);

}  // namespace ember::kernels::cpu

// The pointwise activations and their derivatives, one scalar at a time: the formulas that the
// CPU kernels (kernels/cpu/activation.cpp) and the GPU kernels (kernels/cuda/activation.cu) both
// apply, so the two devices compute the same thing by construction.
//
// Math calls resolve to std:: on the host (CPU kernels, the emu copy of the GPU kernels) and to
// CUDA's float and double overloads in nvcc's device code.
#pragma once

#include <cmath>
#include <cstdint>

#include "runtime/host_device.h"

namespace ember::kernels {

enum class Activation : uint8_t {
  relu,
  leaky_relu,
  sigmoid,
  tanh,
  gelu,
  gelu_tanh,
  silu,
  elu,
  softplus,
  hardtanh,
  hardswish,
  hardsigmoid,
  mish
};

// alpha: leaky_relu's negative slope, elu's alpha, hardtanh's min_val. beta, threshold:
// softplus's; beta is also hardtanh's max_val.
struct ActivationParams {
  double alpha = 0.0, beta = 1.0, threshold = 20.0;
};

// sigmoid and tanh differentiate from their output; every other activation from its input.
EMBER_HOST_DEVICE bool backward_uses_output(Activation a) {
  return a == Activation::sigmoid || a == Activation::tanh;
}

// The parameters in the element type, converted once per call of a kernel, not per element.
template <typename T>
struct ActivationCoeffs {
  T alpha, beta, threshold;
};
template <typename T>
ActivationCoeffs<T> activation_coeffs(const ActivationParams& p) {
  return {static_cast<T>(p.alpha), static_cast<T>(p.beta), static_cast<T>(p.threshold)};
}

namespace math {
#if defined(__CUDA_ARCH__)
using ::erf;
using ::exp;
using ::expm1;
using ::log1p;
using ::tanh;
#else
using std::erf;
using std::exp;
using std::expm1;
using std::log1p;
using std::tanh;
#endif
// tanh(softplus(x)) = tanh(log(1 + e^x)), as PyTorch's mish computes it (e^x overflowing to inf
// gives tanh(inf) = 1).
template <typename T>
EMBER_HOST_DEVICE T tanh_softplus(T x) {
  return tanh(log1p(exp(x)));
}
}  // namespace math

namespace activation_constants {
constexpr double kSqrt1_2 = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kSqrt2_Pi = 0.79788456080286535588;    // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;
}  // namespace activation_constants

// act(x). A caller that passes `a` as a compile-time constant gets the one formula, no switch.
template <typename T>
EMBER_HOST_DEVICE T activation_value(Activation a, const ActivationCoeffs<T>& p, T x) {
  using namespace activation_constants;
  switch (a) {
    case Activation::relu:
      return x > T(0) ? x : T(0);
    case Activation::leaky_relu:
      return x > T(0) ? x : x * p.alpha;
    case Activation::sigmoid:
      return T(1) / (T(1) + math::exp(-x));
    case Activation::tanh:
      return math::tanh(x);
    case Activation::gelu:
      return x * T(0.5) * (T(1) + math::erf(x * T(kSqrt1_2)));
    case Activation::gelu_tanh: {
      const T inner = T(kSqrt2_Pi) * (x + T(kGeluC) * x * x * x);
      return T(0.5) * x * (T(1) + math::tanh(inner));
    }
    case Activation::silu:
      return x / (T(1) + math::exp(-x));
    case Activation::elu:
      return x > T(0) ? x : p.alpha * math::expm1(x);
    case Activation::softplus: {
      const T bx = x * p.beta;
      return bx > p.threshold ? x : math::log1p(math::exp(bx)) / p.beta;
    }
    case Activation::hardtanh:  // NaN stays NaN, as PyTorch's
      return x < p.alpha ? p.alpha : x > p.beta ? p.beta : x;
    case Activation::hardswish:  // x * relu6(x + 3) / 6
      return x <= T(-3) ? T(0) : x >= T(3) ? x : x * (x + T(3)) / T(6);
    case Activation::hardsigmoid:  // relu6(x + 3) / 6
      return x <= T(-3) ? T(0) : x >= T(3) ? T(1) : x / T(6) + T(0.5);
    case Activation::mish:  // x * tanh(softplus(x))
      return x * math::tanh_softplus(x);
  }
  return x;
}

// g * act'(.), with s = y for sigmoid and tanh (backward_uses_output) and s = x otherwise.
template <typename T>
EMBER_HOST_DEVICE T activation_grad(Activation a, const ActivationCoeffs<T>& p, T s, T g) {
  using namespace activation_constants;
  switch (a) {
    case Activation::relu:
      return s > T(0) ? g : T(0);
    case Activation::leaky_relu:
      return s > T(0) ? g : g * p.alpha;
    case Activation::sigmoid:
      return g * s * (T(1) - s);
    case Activation::tanh:
      return g * (T(1) - s * s);
    case Activation::gelu: {
      const T cdf = T(0.5) * (T(1) + math::erf(s * T(kSqrt1_2)));
      const T pdf = T(kInvSqrt2Pi) * math::exp(T(-0.5) * s * s);
      return g * (cdf + s * pdf);
    }
    case Activation::gelu_tanh: {
      const T x2 = s * s;
      const T th = math::tanh(T(kSqrt2_Pi) * (s + T(kGeluC) * x2 * s));
      const T dinner = T(kSqrt2_Pi) * (T(1) + T(3) * T(kGeluC) * x2);
      return g * (T(0.5) * (T(1) + th) + T(0.5) * s * (T(1) - th * th) * dinner);
    }
    case Activation::silu: {
      const T sig = T(1) / (T(1) + math::exp(-s));
      return g * sig * (T(1) + s * (T(1) - sig));
    }
    case Activation::elu:
      return s > T(0) ? g : g * p.alpha * math::exp(s);
    case Activation::softplus: {
      const T bx = s * p.beta;
      if (bx > p.threshold) return g;
      const T z = math::exp(bx);
      return g * z / (z + T(1));
    }
    case Activation::hardtanh:  // zero at and beyond the bounds, as PyTorch's
      return s <= p.alpha || s >= p.beta ? T(0) : g;
    case Activation::hardswish:  // PyTorch's: 0 below -3, (x / 3 + 1/2) on [-3, 3], 1 above
      return s < T(-3) ? T(0) : s <= T(3) ? g * (s / T(3) + T(0.5)) : g;
    case Activation::hardsigmoid:  // 1/6 strictly inside (-3, 3), 0 elsewhere
      return s > T(-3) && s < T(3) ? g / T(6) : T(0);
    case Activation::mish: {
      const T sig = T(1) / (T(1) + math::exp(-s));
      const T ts = math::tanh_softplus(s);
      return g * (ts + s * sig * (T(1) - ts * ts));
    }
  }
  return g;
}

}  // namespace ember::kernels

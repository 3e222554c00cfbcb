#include "kernels/cpu/activation.h"

#include <cmath>

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {

namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;     // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kSqrt2_Pi = 0.79788456080286535588;    // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

// Each activation is a small functor pair so the loops below compile to one tight loop each.
template <typename T>
T forward(Activation a, const ActivationParams& p, T x) {
  switch (a) {
    case Activation::relu:
      return x > T(0) ? x : T(0);
    case Activation::leaky_relu:
      return x > T(0) ? x : x * static_cast<T>(p.alpha);
    case Activation::sigmoid:
      return T(1) / (T(1) + std::exp(-x));
    case Activation::tanh:
      return std::tanh(x);
    case Activation::gelu:
      return x * T(0.5) * (T(1) + std::erf(x * static_cast<T>(kSqrt1_2)));
    case Activation::gelu_tanh: {
      const T inner = static_cast<T>(kSqrt2_Pi) * (x + static_cast<T>(kGeluC) * x * x * x);
      return T(0.5) * x * (T(1) + std::tanh(inner));
    }
    case Activation::silu:
      return x / (T(1) + std::exp(-x));
    case Activation::elu:
      return x > T(0) ? x : static_cast<T>(p.alpha) * std::expm1(x);
    case Activation::softplus: {
      const T bx = x * static_cast<T>(p.beta);
      return bx > static_cast<T>(p.threshold) ? x
                                              : std::log1p(std::exp(bx)) / static_cast<T>(p.beta);
    }
  }
  return x;
}

// act'(.) * g, with s = y (sigmoid, tanh) or x.
template <typename T>
T backward(Activation a, const ActivationParams& p, T s, T g) {
  switch (a) {
    case Activation::relu:
      return s > T(0) ? g : T(0);
    case Activation::leaky_relu:
      return s > T(0) ? g : g * static_cast<T>(p.alpha);
    case Activation::sigmoid:
      return g * s * (T(1) - s);
    case Activation::tanh:
      return g * (T(1) - s * s);
    case Activation::gelu: {
      const T cdf = T(0.5) * (T(1) + std::erf(s * static_cast<T>(kSqrt1_2)));
      const T pdf = static_cast<T>(kInvSqrt2Pi) * std::exp(T(-0.5) * s * s);
      return g * (cdf + s * pdf);
    }
    case Activation::gelu_tanh: {
      const T x2 = s * s;
      const T th = std::tanh(static_cast<T>(kSqrt2_Pi) * (s + static_cast<T>(kGeluC) * x2 * s));
      const T dinner = static_cast<T>(kSqrt2_Pi) * (T(1) + T(3) * static_cast<T>(kGeluC) * x2);
      return g * (T(0.5) * (T(1) + th) + T(0.5) * s * (T(1) - th * th) * dinner);
    }
    case Activation::silu: {
      const T sig = T(1) / (T(1) + std::exp(-s));
      return g * sig * (T(1) + s * (T(1) - sig));
    }
    case Activation::elu:
      return s > T(0) ? g : g * static_cast<T>(p.alpha) * std::exp(s);
    case Activation::softplus: {
      const T bx = s * static_cast<T>(p.beta);
      if (bx > static_cast<T>(p.threshold)) return g;
      const T z = std::exp(bx);
      return g * z / (z + T(1));
    }
  }
  return g;
}

template <Activation A, typename T>
void fwd_loop(const ActivationParams& p, int64_t n, const T* x, T* y) {
  parallel_range(n, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) y[i] = forward<T>(A, p, x[i]);
  });
}

template <Activation A, typename T>
void bwd_loop(const ActivationParams& p, int64_t n, const T* s, const T* dy, T* dx) {
  parallel_range(n, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) dx[i] = backward<T>(A, p, s[i], dy[i]);
  });
}

// Turns the runtime activation into a template argument, so each loop body is specialised.
template <typename F>
void dispatch_activation(Activation a, F&& f) {
  switch (a) {
    case Activation::relu:
      return f(std::integral_constant<Activation, Activation::relu>{});
    case Activation::leaky_relu:
      return f(std::integral_constant<Activation, Activation::leaky_relu>{});
    case Activation::sigmoid:
      return f(std::integral_constant<Activation, Activation::sigmoid>{});
    case Activation::tanh:
      return f(std::integral_constant<Activation, Activation::tanh>{});
    case Activation::gelu:
      return f(std::integral_constant<Activation, Activation::gelu>{});
    case Activation::gelu_tanh:
      return f(std::integral_constant<Activation, Activation::gelu_tanh>{});
    case Activation::silu:
      return f(std::integral_constant<Activation, Activation::silu>{});
    case Activation::elu:
      return f(std::integral_constant<Activation, Activation::elu>{});
    case Activation::softplus:
      return f(std::integral_constant<Activation, Activation::softplus>{});
  }
}

}  // namespace

void activation_fwd_cpu(Activation act, DType t, const ActivationParams& p, int64_t n,
                        const void* x, void* y) {
  EMBER_DISPATCH_FLOAT(t, "activation", [&] {
    dispatch_activation(act, [&](auto a) {
      fwd_loop<decltype(a)::value, scalar_t>(p, n, static_cast<const scalar_t*>(x),
                                             static_cast<scalar_t*>(y));
    });
  });
}

void activation_bwd_cpu(Activation act, DType t, const ActivationParams& p, int64_t n,
                        const void* saved, const void* dy, void* dx) {
  EMBER_DISPATCH_FLOAT(t, "activation_backward", [&] {
    dispatch_activation(act, [&](auto a) {
      bwd_loop<decltype(a)::value, scalar_t>(p, n, static_cast<const scalar_t*>(saved),
                                             static_cast<const scalar_t*>(dy),
                                             static_cast<scalar_t*>(dx));
    });
  });
}

}  // namespace ember::kernels::cpu

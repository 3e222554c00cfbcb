#include "kernels/kernel_table.h"

#include "kernels/cpu/loops.h"

namespace ember::kernels::cpu {

namespace {

// Half types compute in float (C) and round on store.
template <Activation A, typename T, typename C = compute_t<T>>
void fwd_loop(const ActivationParams& params, int64_t n, const T* x, T* y) {
  const ActivationCoeffs<C> p = activation_coeffs<C>(params);
  parallel_range(n, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) y[i] = activation_value<C>(A, p, x[i]);
  });
}

template <Activation A, typename T, typename C = compute_t<T>>
void bwd_loop(const ActivationParams& params, int64_t n, const T* s, const T* dy, T* dx) {
  const ActivationCoeffs<C> p = activation_coeffs<C>(params);
  parallel_range(n, [&](int64_t lo, int64_t len) {
    for (int64_t i = lo; i < lo + len; ++i) dx[i] = activation_grad<C>(A, p, s[i], dy[i]);
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
    case Activation::hardtanh:
      return f(std::integral_constant<Activation, Activation::hardtanh>{});
    case Activation::hardswish:
      return f(std::integral_constant<Activation, Activation::hardswish>{});
    case Activation::hardsigmoid:
      return f(std::integral_constant<Activation, Activation::hardsigmoid>{});
    case Activation::mish:
      return f(std::integral_constant<Activation, Activation::mish>{});
  }
}

}  // namespace

void activation_fwd(Activation act, DType t, const ActivationParams& p, int64_t n, const void* x,
                    void* y, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "activation", [&] {
    dispatch_activation(act, [&](auto a) {
      fwd_loop<decltype(a)::value, scalar_t>(p, n, static_cast<const scalar_t*>(x),
                                             static_cast<scalar_t*>(y));
    });
  });
}

void activation_bwd(Activation act, DType t, const ActivationParams& p, int64_t n,
                    const void* saved, const void* dy, void* dx, Stream) {
  EMBER_DISPATCH_FLOAT_HALF(t, "activation_backward", [&] {
    dispatch_activation(act, [&](auto a) {
      bwd_loop<decltype(a)::value, scalar_t>(p, n, static_cast<const scalar_t*>(saved),
                                             static_cast<const scalar_t*>(dy),
                                             static_cast<scalar_t*>(dx));
    });
  });
}

}  // namespace ember::kernels::cpu

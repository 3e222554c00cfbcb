// Gradient clipping (nn/clip_grad.h): reductions of the public API, then the fused scaling op.
#include "nn/clip_grad.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "ops/optim.h"

namespace ember::nn {

namespace {

std::vector<Tensor> grads_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> gs;
  for (const Tensor& p : params) {
    Tensor g = grad(p);
    if (g.defined()) gs.push_back(g);
  }
  return gs;
}

// One gradient's share of the total: max |g| for p = inf, else sum |g|^p. For p = 0 PyTorch takes
// the 0-"norm" of the gradients' 0-norms, so a gradient counts 1 when it has a non-zero.
Tensor share(const Tensor& g, double p) {
  if (std::isinf(p)) return amax(abs(g));
  if (p == 0.0) {
    const Tensor zero = zeros({}, {g.dtype(), g.device()});
    return ne(sum(ne(g, zero)), zeros({}, {kInt64, g.device()})).to(g.dtype());
  }
  if (p == 1.0) return sum(abs(g));
  if (p == 2.0) return sum(mul(g, g));
  return sum(pow(abs(g), p));
}

// norm_type as Python prints a float ("2.0", "0.5", "inf"), for PyTorch's message.
std::string python_float(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, v == std::floor(v) && std::abs(v) < 1e15 ? "%.1f" : "%.17g", v);
  return buf;
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  EMBER_CHECK_VALUE(norm_type >= 0.0 && !std::isnan(norm_type),
                    "clip_grad_norm_: expected norm_type >= 0 (or inf), got ", norm_type);
  const std::vector<Tensor> grads = grads_of(params);
  if (grads.empty()) return zeros({});
  NoGradGuard no_grad;
  const Device dev = grads[0].device();
  DType t = grads[0].dtype();
  std::vector<Tensor> shares;
  for (const Tensor& g : grads) {
    EMBER_CHECK_DTYPE(is_floating(g.dtype()), "clip_grad_norm_: a gradient has dtype ", g.dtype(),
                      "; expected a floating dtype");
    t = promote_types(t, g.dtype());
    if (g.numel() == 0) continue;  // adds nothing to any norm
    const Tensor s = share(g, norm_type);
    shares.push_back(s.device() == dev ? s : s.to(dev));
  }
  if (shares.empty()) return zeros({}, {t, dev});
  for (Tensor& s : shares) s = s.to(t);
  const Tensor all = stack(shares);
  Tensor total;
  if (std::isinf(norm_type))
    total = amax(all);
  else if (norm_type == 0.0 || norm_type == 1.0)
    total = sum(all);
  else if (norm_type == 2.0)
    total = sqrt(sum(all));
  else
    total = pow(sum(all), 1.0 / norm_type);
  if (error_if_nonfinite) {
    const double v = total.item();  // the one host read, asked for (Note [Clipping on the device])
    EMBER_CHECK_T(Error, std::isfinite(v), "The total norm of order ", python_float(norm_type),
                  " for gradients from `parameters` is non-finite, so it cannot be clipped. To "
                  "disable this error and scale the gradients by the non-finite norm anyway, set "
                  "`error_if_nonfinite=False`");
  }
  for (const Tensor& g : grads) {
    if (g.numel() == 0) continue;
    ops::clip_grad_scale_(g, g.device() == dev ? total : total.to(g.device()), max_norm);
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  EMBER_CHECK_VALUE(clip_value >= 0.0, "clip_grad_value_: expected clip_value >= 0, got ",
                    clip_value);
  NoGradGuard no_grad;
  for (Tensor g : grads_of(params)) g.copy_(clamp(g, -clip_value, clip_value));
}

Tensor parameters_to_vector(const std::vector<Tensor>& params) {
  std::vector<Tensor> flat;
  for (const Tensor& p : params) {
    EMBER_CHECK_DEVICE(p.device() == params[0].device(),
                       "parameters_to_vector: Found two parameters on different devices (",
                       params[0].device(), " and ", p.device(), "), this is not supported");
    flat.push_back(reshape(p, {p.numel()}));
  }
  if (flat.empty()) return zeros({0});
  return cat(flat);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& params) {
  EMBER_CHECK_SHAPE(vec.dim() == 1, "vector_to_parameters: expected a 1-D vector, got shape ",
                    vec.shape());
  int64_t total = 0;
  for (const Tensor& p : params) total += p.numel();
  EMBER_CHECK_SHAPE(vec.numel() == total, "vector_to_parameters: the vector has ", vec.numel(),
                    " elements but the parameters have ", total);
  int64_t at = 0;
  for (const Tensor& p : params) {
    EMBER_CHECK_DEVICE(p.device() == vec.device(), "vector_to_parameters: a parameter is on ",
                       p.device(), " but the vector is on ", vec.device());
    Tensor data = detach(p);
    data.copy_(vec.slice(0, at, at + p.numel()).view(p.shape()));
    at += p.numel();
  }
}

}  // namespace ember::nn

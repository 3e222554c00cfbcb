#include "autograd/loss.h"

#include <limits>
#include <utility>

#include "autograd/activation.h"
#include "autograd/autocast.h"
#include "autograd/function.h"
#include "autograd/reduce.h"
#include "autograd/shape.h"
#include "autograd/softmax.h"
#include "autograd/elementwise.h"
#include "ops/activation.h"
#include "ops/checks.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ember {

using Saved = std::vector<Tensor>;
using Grads = std::vector<Tensor>;

namespace {

// Class-probability targets (PyTorch's cross_entropy_loss_prob_target): -sum_k w[k] q[k]
// log_softmax[k] per position, composed of differentiable ops.
Tensor cross_entropy_soft(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                          Reduction reduction, double label_smoothing, const Tensor& weight) {
  const char* op = "cross_entropy";
  EMBER_CHECK_SHAPE(logits.dim() >= 2 && target.shape() == logits.shape(), op,
                    ": expected class-probability targets of the input's shape ", logits.shape(),
                    ", got ", target.shape());
  EMBER_CHECK_VALUE(ignore_index < 0, op,
                    ": ignore_index is not supported for floating point (probability) targets");
  EMBER_CHECK_VALUE(label_smoothing >= 0 && label_smoothing <= 1, op,
                    ": expected label_smoothing in [0, 1], got ", label_smoothing);
  const int64_t c = logits.size(1);
  Tensor q = target;
  if (label_smoothing > 0)
    q = add(mul(target, 1.0 - label_smoothing), label_smoothing / static_cast<double>(c));
  Tensor per = mul(log_softmax(logits, 1), q);
  if (weight.defined()) {
    EMBER_CHECK_SHAPE(weight.dim() == 1 && weight.size(0) == c, op,
                      ": expected a weight of shape [", c, "] (one per class), got ",
                      weight.shape());
    Shape ws(static_cast<size_t>(logits.dim()), 1);
    ws[1] = c;
    per = mul(per, reshape(weight, ws));
  }
  per = neg(sum(per, {1}));  // per position
  if (reduction == Reduction::None) return per;
  if (reduction == Reduction::Sum) return sum(per);
  return mean(per);  // over the positions (NaN when there are none)
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     Reduction reduction, double label_smoothing, const Tensor& weight) {
  if (autocast_applies({&logits, &weight}) ||
      (is_floating(target.dtype()) && autocast_applies({&target})))
    return autocast_call("cross_entropy", {logits, target, weight}, [&](const auto& c) {
      return cross_entropy(c[0], c[1], ignore_index, reduction, label_smoothing, c[2]);
    });
  if (is_floating(target.dtype()))
    return cross_entropy_soft(logits, target, ignore_index, reduction, label_smoothing, weight);
  ops::NllOutput r =
      ops::cross_entropy(logits, target, ignore_index, reduction, label_smoothing, weight);
  const double divisor = r.divisor;
  return record("CrossEntropyBackward", r.loss, {logits}, {r.log_probs, target, weight},
                [=](const Tensor& g, const Saved& s) {
                  return Grads{ops::cross_entropy_backward(g, s[0], s[1], ignore_index, reduction,
                                                           label_smoothing, divisor, s[2])};
                });
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                Reduction reduction, const Tensor& weight) {
  if (autocast_applies({&log_probs, &weight}))
    return autocast_call("nll_loss", {log_probs, weight}, [&](const auto& c) {
      return nll_loss(c[0], target, ignore_index, reduction, c[1]);
    });
  ops::NllOutput r = ops::nll_loss(log_probs, target, ignore_index, reduction, weight);
  const double divisor = r.divisor;
  return record("NllLossBackward", r.loss, {log_probs}, {log_probs, target, weight},
                [=](const Tensor& g, const Saved& s) {
                  return Grads{ops::nll_loss_backward(g, s[0], s[1], ignore_index, reduction,
                                                      divisor, s[2])};
                });
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (autocast_applies({&input, &target}))
    return autocast_call("mse_loss", {input, target},
                         [&](const auto& c) { return mse_loss(c[0], c[1], reduction); });
  const bool want_target = target.requires_grad();
  return record("MseLossBackward", ops::mse_loss(input, target, reduction), {input, target},
                {input, target}, [=](const Tensor& g, const Saved& s) {
                  Tensor gi = ops::mse_loss_backward(g, s[0], s[1], reduction);
                  return Grads{gi, want_target ? ops::neg(gi) : Tensor()};
                });
}

namespace {

// The per-element losses as they are, summed or averaged (autograd's sum and mean).
Tensor reduced(const Tensor& per, Reduction r) {
  if (r == Reduction::Sum) return sum(per);
  if (r == Reduction::Mean) return mean(per);
  return per;
}

// input and target of one floating dtype, shape and device; each optional tensor of that dtype
// and device, broadcastable to the input's shape.
void check_binary(const char* op, const Tensor& input, const Tensor& target,
                  std::initializer_list<std::pair<const char*, const Tensor*>> optional) {
  ops::check_same_device(op, {&input, &target});
  ops::check_floating(op, input);
  EMBER_CHECK_DTYPE(target.dtype() == input.dtype(), op, ": expected target of dtype ",
                    input.dtype(), " (the input's), got ", target.dtype());
  EMBER_CHECK_SHAPE(target.shape() == input.shape(), op, ": expected target of shape ",
                    input.shape(), " (the input's), got ", target.shape());
  for (const auto& [name, t] : optional) {
    if (!t->defined()) continue;
    ops::check_same_device(op, {&input, t});
    EMBER_CHECK_DTYPE(t->dtype() == input.dtype(), op, ": expected ", name, " of dtype ",
                      input.dtype(), " (the input's), got ", t->dtype());
    bool fits = t->dim() <= input.dim();
    for (int64_t d = 1; fits && d <= t->dim(); ++d)
      fits = t->size(-d) == 1 || t->size(-d) == input.size(-d);
    EMBER_CHECK_SHAPE(fits, op, ": ", name, " of shape ", t->shape(),
                      " does not broadcast to the input's shape ", input.shape());
  }
}

Tensor times(const Tensor& a, const Tensor& w) {
  return w.defined() ? ops::mul(a, w) : a;
}

// log(x) and log(1 - x), each clamped at -100 (PyTorch's binary cross entropy).
std::pair<Tensor, Tensor> clamped_logs(const Tensor& x) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return {ops::clamp(ops::log(x), -100, kInf),
          ops::clamp(ops::log(ops::add(ops::neg(x), 1.0)), -100, kInf)};
}

// log(1 + exp(-x)) without overflow: log(1 + exp(-|x|)) + max(-x, 0).
Tensor log1p_exp_neg(const Tensor& x) {
  return ops::add(ops::softplus(ops::neg(ops::abs(x)), 1.0, 20.0), ops::relu(ops::neg(x)));
}

}  // namespace

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction reduction) {
  const char* op = "binary_cross_entropy";
  if (autocast_applies({&input, &target, &weight}))
    return autocast_call(op, {input, target, weight}, [&](const auto& c) {
      return binary_cross_entropy(c[0], c[1], c[2], reduction);
    });
  check_binary(op, input, target, {{"weight", &weight}});
  if (input.numel() > 0) {
    const double lo = ops::amin(input).item(), hi = ops::amax(input).item();
    EMBER_CHECK_VALUE(lo >= 0 && hi <= 1, op,
                      ": all elements of input should be between 0 and 1, got values in [", lo,
                      ", ", hi, "]");
  }
  // -(y log x + (1 - y) log(1 - x)) = -(y (log x - log(1 - x)) + log(1 - x))
  const auto [log_x, log_1mx] = clamped_logs(input);
  const Tensor per =
      times(ops::neg(ops::add(ops::mul(target, ops::sub(log_x, log_1mx)), log_1mx)), weight);
  const bool want_target = target.requires_grad();
  return reduced(
      record("BinaryCrossEntropyBackward", per, {input, target}, {input, target, weight},
             [want_target](const Tensor& g, const Saved& s) {
               const Tensor &x = s[0], &y = s[1], &w = s[2];
               constexpr double kInf = std::numeric_limits<double>::infinity();
               const Tensor denom =
                   ops::clamp(ops::mul(x, ops::add(ops::neg(x), 1.0)), 1e-12, kInf);
               Grads out{times(ops::div(ops::mul(g, ops::sub(x, y)), denom), w), Tensor()};
               if (want_target) {
                 const auto [lx, l1x] = clamped_logs(x);
                 out[1] = times(ops::neg(ops::mul(g, ops::sub(lx, l1x))), w);
               }
               return out;
             }),
      reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        Reduction reduction) {
  const char* op = "binary_cross_entropy_with_logits";
  if (autocast_applies({&input, &target, &weight, &pos_weight}))
    return autocast_call(op, {input, target, weight, pos_weight}, [&](const auto& c) {
      return binary_cross_entropy_with_logits(c[0], c[1], c[2], c[3], reduction);
    });
  check_binary(op, input, target, {{"weight", &weight}, {"pos_weight", &pos_weight}});
  // (1 - y) x + l log(1 + exp(-x)), l = 1 + (pos_weight - 1) y
  const Tensor& x = input;
  const Tensor& y = target;
  const Tensor sp = log1p_exp_neg(x);
  const Tensor l =
      pos_weight.defined() ? ops::add(ops::mul(ops::add(pos_weight, -1.0), y), 1.0) : Tensor();
  const Tensor per = times(ops::add(ops::mul(ops::add(ops::neg(y), 1.0), x), times(sp, l)), weight);
  const bool want_target = target.requires_grad();
  return reduced(record("BinaryCrossEntropyWithLogitsBackward", per, {input, target},
                        {input, target, weight, pos_weight},
                        [want_target](const Tensor& g, const Saved& s) {
                          const Tensor &x = s[0], &y = s[1], &w = s[2], &pw = s[3];
                          const Tensor l = pw.defined()
                                               ? ops::add(ops::mul(ops::add(pw, -1.0), y), 1.0)
                                               : Tensor();
                          // d/dx = (1 - y) + l (sigmoid(x) - 1); d/dy = -x + (pos_weight - 1) log(1
                          // + e^-x)
                          const Tensor dx = ops::add(ops::add(ops::neg(y), 1.0),
                                                     times(ops::add(ops::sigmoid(x), -1.0), l));
                          Grads out{times(ops::mul(g, dx), w), Tensor()};
                          if (want_target) {
                            Tensor dy = ops::neg(x);
                            if (pw.defined())
                              dy = ops::add(dy, ops::mul(ops::add(pw, -1.0), log1p_exp_neg(x)));
                            out[1] = times(ops::mul(g, dy), w);
                          }
                          return out;
                        }),
                 reduction);
}

namespace {

// input and target of one floating dtype, shape and device, as the losses below need.
void check_pair(const char* op, const Tensor& input, const Tensor& target) {
  check_binary(op, input, target, {});
}

Tensor zero_like_scalar(const Tensor& x) {
  return zeros({}, {x.dtype(), x.device()});
}

// where(|d| < limit, inside(d), outside(|d|)): the two pieces of smooth_l1 and huber, whose
// gradients where composes (d / beta or d inside; beta- or delta-scaled sign(d) outside).
template <typename Inside, typename Outside>
Tensor piecewise(const Tensor& d, double limit, Inside inside, Outside outside) {
  const Tensor ad = abs(d);
  const Tensor in = ember::lt(ad, full({}, limit, {d.dtype(), d.device()}));
  return where(in, inside(d), outside(ad));
}

}  // namespace

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (autocast_applies({&input, &target}))
    return autocast_call("l1_loss", {input, target},
                         [&](const auto& c) { return l1_loss(c[0], c[1], reduction); });
  check_pair("l1_loss", input, target);
  return reduced(abs(sub(input, target)), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction,
                      double beta) {
  const char* op = "smooth_l1_loss";
  if (autocast_applies({&input, &target}))
    return autocast_call(op, {input, target}, [&](const auto& c) {
      return smooth_l1_loss(c[0], c[1], reduction, beta);
    });
  check_pair(op, input, target);
  EMBER_CHECK_VALUE(beta >= 0, op, ": expected a non-negative beta, got ", beta);
  if (beta == 0) return l1_loss(input, target, reduction);
  const Tensor d = sub(input, target);
  return reduced(piecewise(
                     d, beta, [beta](const Tensor& v) { return mul(mul(v, v), 0.5 / beta); },
                     [beta](const Tensor& av) { return add(av, -0.5 * beta); }),
                 reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  const char* op = "huber_loss";
  if (autocast_applies({&input, &target}))
    return autocast_call(op, {input, target}, [&](const auto& c) {
      return huber_loss(c[0], c[1], reduction, delta);
    });
  check_pair(op, input, target);
  EMBER_CHECK_VALUE(delta > 0, op, ": expected a positive delta, got ", delta);
  const Tensor d = sub(input, target);
  return reduced(piecewise(
                     d, delta, [](const Tensor& v) { return mul(mul(v, v), 0.5); },
                     [delta](const Tensor& av) { return mul(add(av, -0.5 * delta), delta); }),
                 reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction,
              bool log_target) {
  const char* op = "kl_div";
  EMBER_CHECK_VALUE(reduction == "none" || reduction == "mean" || reduction == "batchmean" ||
                        reduction == "sum",
                    op, ": reduction must be 'none', 'mean', 'batchmean' or 'sum', got '",
                    reduction, "'");
  if (autocast_applies({&input, &target}))
    return autocast_call(op, {input, target}, [&](const auto& c) {
      return kl_div(c[0], c[1], reduction, log_target);
    });
  check_pair(op, input, target);
  Tensor per;
  if (log_target) {
    per = mul(exp(target), sub(target, input));
  } else {
    // target log(target) is 0 where target is 0 (xlogy); where keeps log(0)'s -inf out of both
    // the values and the gradients.
    const Tensor positive = ember::gt(target, zero_like_scalar(target));
    const Tensor safe = where(positive, target, ones({}, {target.dtype(), target.device()}));
    per = sub(mul(target, log(safe)), mul(target, input));
  }
  if (reduction == "none") return per;
  if (reduction == "sum") return sum(per);
  if (reduction == "mean") return mean(per);
  const double batch = input.dim() > 0 ? static_cast<double>(input.size(0)) : 1.0;
  return mul(sum(per), 1.0 / batch);  // batchmean
}

Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                             double margin, Reduction reduction) {
  const char* op = "cosine_embedding_loss";
  if (autocast_applies({&x1, &x2}))
    return autocast_call(op, {x1, x2}, [&](const auto& c) {
      return cosine_embedding_loss(c[0], c[1], target, margin, reduction);
    });
  check_pair(op, x1, x2);
  EMBER_CHECK_SHAPE(x1.dim() == 1 || x1.dim() == 2, op,
                    ": expected inputs of shape [N, D] or [D], got ", x1.shape());
  const Shape ts = x1.dim() == 2 ? Shape{x1.size(0)} : Shape{};
  EMBER_CHECK_SHAPE(target.shape() == ts, op, ": expected a target of shape ", ts,
                    " for inputs of shape ", x1.shape(), ", got ", target.shape());
  ops::check_same_device(op, {&x1, &target});
  constexpr double kEps = 1e-12;  // PyTorch's EPSILON
  const int64_t d = x1.dim() - 1;
  const Tensor prod = sum(mul(x1, x2), {d});
  const Tensor mag1 = add(sum(mul(x1, x1), {d}), kEps), mag2 = add(sum(mul(x2, x2), {d}), kEps);
  const Tensor cos = div(prod, sqrt(mul(mag1, mag2)));
  const Tensor y = target.to(x1.dtype());
  const Tensor zero = zero_like_scalar(cos);
  const Tensor pos = where(ember::eq(y, ones({}, {y.dtype(), y.device()})), add(neg(cos), 1.0),
                           zero);
  const Tensor neg_part = where(ember::eq(y, full({}, -1.0, {y.dtype(), y.device()})),
                                relu(add(cos, -margin)), zero);
  return reduced(add(pos, neg_part), reduction);
}

Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target, double margin,
                           Reduction reduction) {
  const char* op = "margin_ranking_loss";
  if (autocast_applies({&x1, &x2, &target}))
    return autocast_call(op, {x1, x2, target}, [&](const auto& c) {
      return margin_ranking_loss(c[0], c[1], c[2], margin, reduction);
    });
  check_pair(op, x1, x2);
  check_pair(op, x1, target);
  return reduced(relu(add(mul(neg(target), sub(x1, x2)), margin)), reduction);
}

}  // namespace ember

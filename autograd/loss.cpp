#include "autograd/loss.h"

#include <limits>
#include <utility>

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "autograd/reduce.h"
#include "ops/activation.h"
#include "ops/checks.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ember {

using Saved = std::vector<Tensor>;
using Grads = std::vector<Tensor>;

Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     Reduction reduction, double label_smoothing) {
  if (autocast_applies({&logits}))
    return autocast_call("cross_entropy", {logits}, [&](const auto& c) {
      return cross_entropy(c[0], target, ignore_index, reduction, label_smoothing);
    });
  ops::NllOutput r = ops::cross_entropy(logits, target, ignore_index, reduction, label_smoothing);
  const int64_t count = r.count;
  return record("CrossEntropyBackward", r.loss, {logits}, {r.log_probs, target},
                [=](const Tensor& g, const Saved& s) {
                  return Grads{ops::cross_entropy_backward(g, s[0], s[1], ignore_index, reduction,
                                                           label_smoothing, count)};
                });
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index,
                Reduction reduction) {
  if (autocast_applies({&log_probs}))
    return autocast_call("nll_loss", {log_probs}, [&](const auto& c) {
      return nll_loss(c[0], target, ignore_index, reduction);
    });
  ops::NllOutput r = ops::nll_loss(log_probs, target, ignore_index, reduction);
  const int64_t count = r.count;
  return record(
      "NllLossBackward", r.loss, {log_probs}, {log_probs, target},
      [=](const Tensor& g, const Saved& s) {
        return Grads{ops::nll_loss_backward(g, s[0], s[1], ignore_index, reduction, count)};
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

}  // namespace ember

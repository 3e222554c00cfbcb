// Losses: checks (shapes, the int64 target, labels in range), then the device's loss kernels
// (kernels/loss_shape.h). Cross entropy keeps the log-probabilities it computes for the backward.
#include "ops/loss.h"

#include <cmath>
#include <sstream>
#include <tuple>
#include <utility>

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/reduce.h"
#include "runtime/tensor.h"

namespace ember::ops {

using kernels::NllShape;

namespace {

void check_float(const char* op, const char* what, const Tensor& x) {
  EMBER_CHECK_DTYPE(is_floating(x.dtype()), op, ": expected ", what,
                    " of a floating dtype (float32, float64, float16 or bfloat16), got ",
                    x.dtype());
}

// The target's shape for `input`: input's shape without dim 1.
Shape target_shape(const Shape& input) {
  Shape s = input;
  s.erase(s.begin() + 1);
  return s;
}

std::string format_index(std::vector<int64_t> idx) {
  std::ostringstream os;
  os << Shape(idx);
  return os.str();
}

NllShape check_classification(const char* op, const Tensor& input, const Tensor& target) {
  check_same_device(op, {&input, &target});
  check_float(op, "input", input);
  EMBER_CHECK_SHAPE(input.dim() >= 2, op,
                    ": expected input of shape [N, C] or [N, C, d1, ...], got ", input.shape());
  EMBER_CHECK_DTYPE(target.dtype() == kInt64, op,
                    ": expected target of dtype int64 (class indices), got ", target.dtype());
  EMBER_CHECK_SHAPE(target.shape() == target_shape(input.shape()), op,
                    ": expected target of shape ", target_shape(input.shape()), " for input ",
                    input.shape(), ", got ", target.shape());
  NllShape s;
  s.n = input.size(0), s.c = input.size(1);
  for (int64_t d = 2; d < input.dim(); ++d) s.s *= input.size(d);
  return s;
}

// Class weights: undefined, or [C] of the input's dtype (float32 for a widened half input) and
// device.
void check_weight(const char* op, const Tensor& weight, const Tensor& input, int64_t c) {
  if (!weight.defined()) return;
  check_same_device(op, {&input, &weight});
  EMBER_CHECK_SHAPE(weight.dim() == 1 && weight.size(0) == c, op,
                    ": expected a weight of shape [", c, "] (one per class) for input of shape ",
                    input.shape(), ", got ", weight.shape());
  const bool ok = weight.dtype() == input.dtype() ||
                  (is_half(input.dtype()) &&
                   (weight.dtype() == kFloat32 || is_half(weight.dtype())));
  EMBER_CHECK_DTYPE(ok, op, ": expected a weight of dtype ", input.dtype(), " (the input's), got ",
                    weight.dtype());
}

// Note [Targets on the host]
// The labels are checked (and the positions not ignored counted) on the host, after one copy of
// the targets from a GPU device: NllOutput::count is a host value that the backward's mean
// needs, so the op waits for the targets either way, and an error then names the label and its
// position on every device alike. The kernels trust the targets they are given.
//
// With class weights the sum of the counted positions' weights (Mean's divisor) is worked out
// there too, from a host copy of the weights.
//
// requires: target contiguous int64 on the cpu; weights null or c values. Returns the count of
// positions not ignored and the sum of their targets' weights (the count when unweighted).
std::pair<int64_t, double> check_labels(const char* op, const NllShape& s, const Tensor& target,
                                        int64_t ignore_index, const double* weights) {
  const int64_t* tv = target.data<int64_t>();
  int64_t bad = -1, count = 0;
  double total = 0;
  for (int64_t p = 0; p < s.n * s.s && bad < 0; ++p) {
    if (tv[p] != ignore_index && (tv[p] < 0 || tv[p] >= s.c)) bad = p;
    if (tv[p] == ignore_index || bad >= 0) continue;
    ++count;
    total += weights ? weights[tv[p]] : 1.0;
  }
  if (bad < 0) return {count, total};
  Shape ts = target.shape();
  std::vector<int64_t> idx(ts.size());
  for (int64_t d = static_cast<int64_t>(ts.size()) - 1, r = bad; d >= 0; --d) {
    idx[d] = r % ts[d];
    r /= ts[d];
  }
  EMBER_THROW(IndexError, op, ": target ", target.data<int64_t>()[bad], " at position ",
              format_index(idx), " is out of range for ", s.c, " classes (expected 0 <= target < ",
              s.c, " or ignore_index = ", ignore_index, ")");
}

// The per-position losses and, for Mean/Sum, their sum on the device, in one call to the
// device's kernels (and, for cross entropy, the log-probabilities before them), after the labels
// are checked and counted on the host (Note [Targets on the host]). `x` is the logits (fused)
// or the log-probabilities, contiguous.
NllOutput nll_forward(const char* op, bool fused, NllShape s, Reduction r, int64_t ignore_index,
                      double eps, const Tensor& x, const Tensor& target, const Tensor& weight) {
  const Device dev = x.device();
  NllOutput out;
  const std::vector<double> wv =
      weight.defined() ? weight.to_vector<double>() : std::vector<double>{};
  std::tie(out.count, out.divisor) =
      check_labels(op, s, target.cpu(), ignore_index, weight.defined() ? wv.data() : nullptr);
  s.ignore_index = ignore_index, s.smoothing = eps;
  for (double v : wv) s.weight_total += v;
  const DType t = x.dtype();
  const kernels::KernelTable& k = kernels_for(dev);
  Tensor per;
  DataPtr ws;
  if (r == Reduction::None) {
    per = empty({s.n * s.s}, {t, dev});
    out.loss = per.view(target.shape());
  } else {
    ws = workspace(dev, k.nll_workspace_bytes(s));
    out.loss = empty({}, {t, dev});
  }
  const double divisor = r == Reduction::Mean ? out.divisor : 1.0;
  const void* wp = weight.defined() ? weight.data_ptr() : nullptr;
  void* total = r == Reduction::None ? nullptr : out.loss.data_ptr();
  double* acc = static_cast<double*>(ws.get());
  void* per_ptr = per.defined() ? per.data_ptr() : nullptr;
  if (fused) {
    out.log_probs = empty(x.shape(), {t, dev});
    k.cross_entropy_fwd(t, s, x.data_ptr(), target.data<int64_t>(), wp, out.log_probs.data_ptr(),
                        per_ptr, acc, divisor, total, stream_of(dev));
  } else {
    k.nll_fwd(t, s, x.data_ptr(), target.data<int64_t>(), wp, per_ptr, acc, divisor, total,
              stream_of(dev));
  }
  return out;
}

// grad_out's stride per position and the extra factor of the reduction.
std::pair<int64_t, double> grad_layout(const char* op, const Tensor& g, const Shape& target,
                                       Reduction r, double divisor) {
  if (r == Reduction::None) {
    EMBER_CHECK_SHAPE(g.shape() == target, op, ": expected grad_out of shape ", target, ", got ",
                      g.shape());
    return {1, 1.0};
  }
  EMBER_CHECK_SHAPE(g.numel() == 1, op, ": expected a scalar grad_out, got shape ", g.shape());
  return {0, r == Reduction::Mean ? 1.0 / divisor : 1.0};
}

Tensor nll_backward(const char* op, bool fused, const Tensor& grad_out, const Tensor& lp_in,
                    const Tensor& target_in, int64_t ignore_index, Reduction r, double eps,
                    double divisor, const Tensor& weight_in) {
  NllShape s = check_classification(op, lp_in, target_in);
  s.ignore_index = ignore_index, s.smoothing = eps;
  const Device dev = check_same_device(op, {&lp_in, &grad_out});
  // A half input's loss keeps float32 log-probabilities (Note [Widened half ops]).
  const bool half = is_half(grad_out.dtype());
  EMBER_CHECK_DTYPE(grad_out.dtype() == lp_in.dtype() || (half && lp_in.dtype() == kFloat32), op,
                    ": expected grad_out of dtype ", lp_in.dtype(), ", got ", grad_out.dtype());
  if (half)
    return nll_backward(op, fused, grad_out.to(kFloat32), widen_half(lp_in), target_in,
                        ignore_index, r, eps, divisor, widen_half(weight_in))
        .to(grad_out.dtype());
  check_weight(op, weight_in, lp_in, s.c);
  const Tensor weight = weight_in.defined() ? weight_in.contiguous() : Tensor();
  // Only the smoothed gradient needs the weights' sum: read on the host (Note [Targets on the
  // host]), so only that combination waits for the device here.
  if (weight.defined() && fused && eps > 0) s.weight_total = ops::sum(weight.to(kFloat64)).item();
  const auto [stride, scale] = grad_layout(op, grad_out, target_in.shape(), r, divisor);
  const Tensor g = grad_out.contiguous(), target = target_in.contiguous();
  const Tensor lp = fused ? lp_in.contiguous() : Tensor();
  Tensor dx = empty(lp_in.shape(), {lp_in.dtype(), dev});
  if (dx.numel() == 0) return dx;
  kernels_for(dev).nll_bwd(dx.dtype(), s, fused, fused ? lp.data_ptr() : nullptr,
                           target.data<int64_t>(), weight.defined() ? weight.data_ptr() : nullptr,
                           g.data_ptr(), stride, scale, dx.data_ptr(), stream_of(dev));
  return dx;
}

}  // namespace

NllOutput cross_entropy(const Tensor& logits, const Tensor& target_in, int64_t ignore_index,
                        Reduction reduction, double label_smoothing, const Tensor& weight) {
  const char* op = "cross_entropy";
  const NllShape s = check_classification(op, logits, target_in);
  EMBER_CHECK_VALUE(label_smoothing >= 0 && label_smoothing <= 1, op,
                    ": expected label_smoothing in [0, 1], got ", label_smoothing);
  check_weight(op, weight, logits, s.c);
  if (is_half(logits.dtype())) {  // Note [Widened half ops] in ops/dispatch.h
    NllOutput r = cross_entropy(logits.to(kFloat32), target_in, ignore_index, reduction,
                                label_smoothing, widen_half(weight));
    r.loss = r.loss.to(logits.dtype());
    return r;  // log_probs stay float32 for the backward
  }
  const Tensor x = logits.contiguous(), target = target_in.contiguous();
  return nll_forward(op, true, s, reduction, ignore_index, label_smoothing, x, target,
                     weight.defined() ? weight.contiguous() : Tensor());
}

Tensor cross_entropy_backward(const Tensor& grad_out, const Tensor& log_probs, const Tensor& target,
                              int64_t ignore_index, Reduction reduction, double label_smoothing,
                              double divisor, const Tensor& weight) {
  return nll_backward("cross_entropy_backward", true, grad_out, log_probs, target, ignore_index,
                      reduction, label_smoothing, divisor, weight);
}

NllOutput nll_loss(const Tensor& log_probs, const Tensor& target_in, int64_t ignore_index,
                   Reduction reduction, const Tensor& weight) {
  const char* op = "nll_loss";
  const NllShape s = check_classification(op, log_probs, target_in);
  check_weight(op, weight, log_probs, s.c);
  if (is_half(log_probs.dtype())) {  // Note [Widened half ops] in ops/dispatch.h
    NllOutput r = nll_loss(log_probs.to(kFloat32), target_in, ignore_index, reduction,
                           widen_half(weight));
    r.loss = r.loss.to(log_probs.dtype());
    return r;
  }
  const Tensor lp = log_probs.contiguous(), target = target_in.contiguous();
  return nll_forward(op, false, s, reduction, ignore_index, 0.0, lp, target,
                     weight.defined() ? weight.contiguous() : Tensor());
}

Tensor nll_loss_backward(const Tensor& grad_out, const Tensor& log_probs, const Tensor& target,
                         int64_t ignore_index, Reduction reduction, double divisor,
                         const Tensor& weight) {
  return nll_backward("nll_loss_backward", false, grad_out, log_probs, target, ignore_index,
                      reduction, 0.0, divisor, weight);
}

namespace {
void check_mse(const char* op, const Tensor& input, const Tensor& target) {
  check_same_device(op, {&input, &target});
  check_float(op, "input", input);
  EMBER_CHECK_DTYPE(target.dtype() == input.dtype(), op, ": expected target of dtype ",
                    input.dtype(), " (the input's), got ", target.dtype());
  EMBER_CHECK_SHAPE(target.shape() == input.shape(), op, ": expected target of shape ",
                    input.shape(), " (the input's), got ", target.shape());
}
}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_mse("mse_loss", input, target);
  if (is_half(input.dtype()))  // Note [Widened half ops] in ops/dispatch.h
    return mse_loss(input.to(kFloat32), target.to(kFloat32), reduction).to(input.dtype());
  const Tensor x = input.contiguous(), y = target.contiguous();
  const int64_t n = x.numel();
  const Device dev = x.device();
  const kernels::KernelTable& k = kernels_for(dev);
  const bool none = reduction == Reduction::None;
  Tensor out = empty(none ? x.shape() : Shape{}, {x.dtype(), dev});
  const DataPtr ws = none ? nullptr : workspace(dev, k.mse_workspace_bytes(n));
  const double divisor = reduction == Reduction::Mean ? static_cast<double>(n) : 1.0;
  k.mse_fwd(x.dtype(), n, x.data_ptr(), y.data_ptr(), none ? out.data_ptr() : nullptr,
            static_cast<double*>(ws.get()), divisor,
            none ? nullptr : out.data_ptr(), stream_of(dev));
  return out;
}

Tensor mse_loss_backward(const Tensor& grad_out, const Tensor& input, const Tensor& target,
                         Reduction reduction) {
  const char* op = "mse_loss_backward";
  check_mse(op, input, target);
  const Device dev = check_same_device(op, {&input, &grad_out});
  EMBER_CHECK_DTYPE(grad_out.dtype() == input.dtype(), op, ": expected grad_out of dtype ",
                    input.dtype(), ", got ", grad_out.dtype());
  const auto [stride, scale] = grad_layout(op, grad_out, input.shape(), reduction, input.numel());
  if (is_half(input.dtype()))  // Note [Widened half ops] in ops/dispatch.h
    return mse_loss_backward(grad_out.to(kFloat32), input.to(kFloat32), target.to(kFloat32),
                             reduction)
        .to(input.dtype());
  const Tensor x = input.contiguous(), y = target.contiguous(), g = grad_out.contiguous();
  Tensor dx = empty(x.shape(), {x.dtype(), dev});
  if (dx.numel() == 0) return dx;
  kernels_for(dev).mse_bwd(x.dtype(), x.numel(), x.data_ptr(), y.data_ptr(), g.data_ptr(), stride,
                           scale, dx.data_ptr(), stream_of(dev));
  return dx;
}

}  // namespace ember::ops

// Folding batch norm into convolutions (nn/fuse.h).
#include "nn/fuse.h"

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "nn/conv.h"
#include "nn/layers.h"

namespace ember::nn {
namespace {

// Why `bn` cannot be folded into `conv`, or "".
std::string refusal(const Conv2d& conv, const BatchNorm2d& bn) {
  if (bn.folded) return "already folded";
  if (!bn.running_mean.defined()) return "no running statistics (track_running_stats=False)";
  if (bn.num_features != conv.out_channels)
    return std::to_string(bn.num_features) + " features after a convolution of " +
           std::to_string(conv.out_channels) + " outputs";
  return "";
}

// w' = w s, b' = (b - mean) s + beta with s = gamma / sqrt(var + eps), per output channel, in
// float64, written back in the convolution's dtype.
void fold(Conv2d& conv, BatchNorm2d& bn) {
  const int64_t k = conv.out_channels;
  std::vector<double> w = conv.weight.to(kFloat64).to(kCPU).contiguous().to_vector<double>();
  const std::vector<double> mean = bn.running_mean.to(kFloat64).to(kCPU).to_vector<double>();
  const std::vector<double> var = bn.running_var.to(kFloat64).to(kCPU).to_vector<double>();
  std::vector<double> gamma(size_t(k), 1.0), beta(size_t(k), 0.0), b(size_t(k), 0.0);
  if (bn.weight.defined()) gamma = bn.weight.to(kFloat64).to(kCPU).to_vector<double>();
  if (bn.bias.defined()) beta = bn.bias.to(kFloat64).to(kCPU).to_vector<double>();
  if (conv.bias.defined()) b = conv.bias.to(kFloat64).to(kCPU).to_vector<double>();
  const size_t per = w.size() / size_t(k);
  for (size_t o = 0; o < size_t(k); ++o) {
    const double s = gamma[o] / std::sqrt(var[o] + bn.eps);
    for (size_t i = 0; i < per; ++i) w[o * per + i] *= s;
    b[o] = (b[o] - mean[o]) * s + beta[o];
  }
  NoGradGuard no_grad;
  conv.weight.copy_(from_vector(w, conv.weight.shape()));
  conv.set_bias(from_vector(b, {k}));
  bn.folded = true;
}

// max |a - b| / max |b|.
double relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to(kFloat64).to(kCPU).contiguous().to_vector<double>();
  const std::vector<double> y = b.to(kFloat64).to(kCPU).contiguous().to_vector<double>();
  double d = 0, m = 0;
  for (size_t i = 0; i < y.size(); ++i)
    d = std::max(d, std::abs(x[i] - y[i])), m = std::max(m, std::abs(y[i]));
  return d / (m > 0 ? m : 1.0);
}

}  // namespace

void FoldUndo::restore() const {
  NoGradGuard no_grad;
  conv->weight.copy_(weight);
  conv->set_bias(bias);
  bn->folded = false;
}

std::string fold_batch_norm(const std::shared_ptr<Conv2d>& conv,
                            const std::shared_ptr<BatchNorm2d>& bn, FoldUndo* undo) {
  const std::string why = refusal(*conv, *bn);
  if (!why.empty()) return why;
  *undo = {conv, bn, conv->weight.clone(), conv->bias.defined() ? conv->bias.clone() : Tensor()};
  fold(*conv, *bn);
  return "";
}

std::string fold_relu(const std::shared_ptr<Conv2d>& conv, const std::shared_ptr<Module>& relu) {
  auto act = std::dynamic_pointer_cast<Activation>(relu);
  if (!act || act->name() != "ReLU") return "not a ReLU";
  if (conv->fused_relu || act->folded) return "already folded";
  conv->fused_relu = true;
  act->folded = true;
  return "";
}

namespace {

// In each Sequential: Conv2d, [folded BatchNorm2d], ReLU -> the ReLU into the convolution.
void fold_relus(
    Module& m, FuseReport* report,
    std::vector<std::pair<std::shared_ptr<Conv2d>, std::shared_ptr<Activation>>>* undo) {
  for (const auto& [parent_name, parent] : m.named_modules()) {
    if (!std::dynamic_pointer_cast<Sequential>(parent)) continue;
    const auto children = parent->named_children();
    const std::string prefix = parent_name.empty() ? "" : parent_name + ".";
    for (size_t i = 0; i < children.size(); ++i) {
      auto conv = std::dynamic_pointer_cast<Conv2d>(children[i].second);
      if (!conv) continue;
      size_t j = i + 1;
      while (j < children.size()) {
        auto bn = std::dynamic_pointer_cast<BatchNorm2d>(children[j].second);
        if (!bn || !bn->folded) break;
        ++j;
      }
      if (j == children.size() || !fold_relu(conv, children[j].second).empty()) continue;
      undo->emplace_back(conv, std::dynamic_pointer_cast<Activation>(children[j].second));
      report->relu.push_back(prefix + children[i].first + "+" + children[j].first);
    }
  }
}

}  // namespace

FuseReport fuse_for_inference(Module& m, const Tensor& example) {
  EMBER_CHECK_VALUE(!m.is_training(),
                    "fuse_for_inference: expected a model in eval mode (call eval() first: the "
                    "batch norms are folded with their running statistics)");
  NoGradGuard no_grad;
  const Tensor before = example.defined() ? m.forward(example) : Tensor();
  FuseReport report;
  std::vector<FoldUndo> undo;
  for (const auto& [parent_name, parent] : m.named_modules()) {
    const auto children = parent->named_children();
    const std::string prefix = parent_name.empty() ? "" : parent_name + ".";
    for (size_t i = 0; i < children.size(); ++i) {
      auto bn = std::dynamic_pointer_cast<BatchNorm2d>(children[i].second);
      if (!bn) continue;
      auto conv = i > 0 ? std::dynamic_pointer_cast<Conv2d>(children[i - 1].second) : nullptr;
      FoldUndo u;
      const std::string why =
          conv ? fold_batch_norm(conv, bn, &u) : "not registered right after a Conv2d";
      if (!why.empty()) {
        report.skipped.push_back(prefix + children[i].first + ": " + why);
        continue;
      }
      undo.push_back(u);
      report.fused.push_back(prefix + children[i - 1].first + "+" + children[i].first);
    }
  }
  std::vector<std::pair<std::shared_ptr<Conv2d>, std::shared_ptr<Activation>>> relus;
  fold_relus(m, &report, &relus);
  if (!example.defined()) return report;
  const double diff = relative_difference(m.forward(example), before);
  if (diff <= kFuseTolerance) return report;
  for (const FoldUndo& u : undo) u.restore();
  for (const auto& [conv, act] : relus) conv->fused_relu = act->folded = false;
  std::string pairs;
  for (const std::string& p : report.fused) pairs += (pairs.empty() ? "" : ", ") + p;
  EMBER_THROW(ValueError,
              "fuse_for_inference: the fused model's output differs from the model's by ", diff,
              " (relative) on the example, so some batch norm does not normalise the "
              "convolution registered before it; the model is left as it was (pairs tried: ",
              pairs, ")");
}

}  // namespace ember::nn

// Folding batch norm into the convolution before it, for inference (docs/nn.md, "Fusing for
// inference"): y = gamma (conv(x) + b - mean) / sqrt(var + eps) + beta is conv(x) with weights
// w * s and bias (b - mean) * s + beta, s = gamma / sqrt(var + eps) per output channel. The
// fused model computes the same function in one pass less over each activation, on every device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace ember::nn {

struct FuseReport {
  // "conv1+bn1", "features.0+features.1": the (convolution, batch norm) pairs folded.
  std::vector<std::string> fused;
  // Batch norms left as they were, with the reason ("layer3.bn2: no running statistics").
  std::vector<std::string> skipped;
  // "features.0+features.2": the ReLUs that follow a convolution (and its folded batch norm) in a
  // Sequential, now applied by the convolution (Conv2d::fused_relu; one cuDNN graph on cuda).
  std::vector<std::string> relu;
};

class Conv2d;
class BatchNorm2d;

// What folding one pair changed, to put it back (restore()).
struct FoldUndo {
  std::shared_ptr<Conv2d> conv;
  std::shared_ptr<BatchNorm2d> bn;
  Tensor weight, bias;  // the convolution's, copied; bias undefined where there was none
  void restore() const;
};

// Folds `bn` into `conv` and returns "", filling *undo; or returns why it cannot (already folded,
// no running statistics, a feature count unlike the convolution's outputs) and changes nothing.
std::string fold_batch_norm(const std::shared_ptr<Conv2d>& conv,
                            const std::shared_ptr<BatchNorm2d>& bn, FoldUndo* undo);

// Moves a ReLU into the convolution before it (conv.fused_relu, relu.folded); "" or why not.
std::string fold_relu(const std::shared_ptr<Conv2d>& conv, const std::shared_ptr<Module>& relu);

// Folds every BatchNorm2d into the Conv2d registered just before it in the same parent (adjacent
// in a Sequential, or conv1/bn1 in a block) when the batch norm has running statistics and as
// many features as the convolution has outputs. The convolution's weights and bias take the batch
// norm's effect (a bias is added where there was none) and the batch norm becomes an identity
// (BatchNorm2d::folded; it refuses to run in training mode). Then, in each Sequential, a ReLU
// right after a convolution (past its folded batch norm) moves into the convolution
// (fold_relu), which on cuda runs conv + bias + relu as one cuDNN graph. The pairing assumes the
// batch norm is applied to that convolution's output, as in Sequential and Ember's models; with
// `example` (an input the model takes) the outputs before and after are compared and, where they
// differ by more than 1e-4 relative, the model is restored and a ValueError names the pairs.
// requires: `m` in eval mode (ValueError otherwise: the batch norms must use running statistics).
FuseReport fuse_for_inference(Module& m, const Tensor& example = Tensor());

// The relative difference the example check allows (float32 rounding of the folded weights).
constexpr double kFuseTolerance = 1e-4;

}  // namespace ember::nn

// Embedding: a lookup table of learnable rows, as torch.nn.Embedding.
#pragma once

#include <optional>

#include "nn/module.h"

namespace ember::nn {

struct EmbeddingOptions {
  std::optional<int64_t> padding_idx;  // that row starts at zero and gets no gradient
  std::optional<double> max_norm;      // rows looked up are first renormalised to this norm
  double norm_type = 2.0;              // the p of max_norm's p-norm
  bool scale_grad_by_freq = false;     // divide each row's gradient by its index's count
};

// y = weight[x] for int64 x of any shape: x's shape + [embedding_dim]. weight ~ N(0, 1), as
// PyTorch initialises it; the padding row is zero.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            EmbeddingOptions options = EmbeddingOptions());
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Embedding"; }
  std::string extra_repr() const override;

  Tensor weight;
  int64_t num_embeddings, embedding_dim;
  EmbeddingOptions options;
};

// The rows of weight that x indexes, scaled in place (without autograd) to norm max_norm where
// their norm_type-norm is larger, as torch.embedding_renorm_. Returns weight.
Tensor& embedding_renorm_(Tensor& weight, const Tensor& x, double max_norm, double norm_type);

}  // namespace ember::nn

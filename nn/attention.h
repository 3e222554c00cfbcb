// MultiheadAttention with PyTorch's arguments, parameter names and initialisation
// (multi_head_attention_forward of autograd/attention.h does the work).
#pragma once

#include <memory>
#include <utility>

#include "autograd/attention.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace ember::nn {

// Parameters: in_proj_weight [3E, E] (or, when kdim or vdim differ from E, q_proj_weight [E, E],
// k_proj_weight [E, kdim], v_proj_weight [E, vdim]), in_proj_bias [3E] (bias), out_proj (a
// Linear(E, E)), bias_k and bias_v [1, 1, E] (add_bias_kv). Xavier-uniform projections, zero
// biases, as PyTorch. kdim, vdim 0: E. ValueError when num_heads does not divide embed_dim.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool add_bias_kv = false, bool add_zero_attn = false, int64_t kdim = 0,
                     int64_t vdim = 0, bool batch_first = false);
  // query [L, N, E] ([N, L, E] when batch_first; [L, E] unbatched), key and value alike with S
  // positions. Returns the output of query's layout and, when need_weights, the attention
  // weights [N, L, S] (averaged over the heads) or [N, num_heads, L, S]; masks as
  // MultiheadAttentionArgs (autograd/attention.h). Dropout in training only.
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = Tensor(),
                                    bool need_weights = true, const Tensor& attn_mask = Tensor(),
                                    bool average_attn_weights = true);
  // Self-attention of x: the output alone.
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "MultiheadAttention"; }

  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias;
  Tensor bias_k, bias_v;
  std::shared_ptr<Linear> out_proj;
  int64_t embed_dim, num_heads, kdim, vdim, head_dim;
  double dropout;
  bool add_zero_attn, batch_first;
};

}  // namespace ember::nn

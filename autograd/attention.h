// Attention, composed of the differentiable matmul, softmax and dropout (so gradients reach
// every input and parameter, on every device):
//   scaled_dot_product_attention   PyTorch 2's torch.nn.functional.scaled_dot_product_attention
//                                  (its math path);
//   multi_head_attention_forward   torch.nn.functional.multi_head_attention_forward (PyTorch
//                                  1.13), behind nn::MultiheadAttention and Python's
//                                  ember.nn.MultiheadAttention.
#pragma once

#include <optional>
#include <utility>

#include "runtime/rng.h"
#include "runtime/tensor.h"

namespace ember {

// softmax(q k^T * scale + bias) v over the last two dims, q [..., L, E], k [..., S, E],
// v [..., S, Ev] (batch dims broadcast), scale 1 / sqrt(E) unless given. attn_mask: bool (True:
// the position takes part; False: -inf) or floating (added), broadcastable to [..., L, S];
// is_causal: position i attends to j <= i (with attn_mask a ValueError, as PyTorch); dropout_p
// applied to the attention weights (always, as PyTorch's function does: pass 0 in eval). A row
// with every position masked gives NaN, as PyTorch's math path. requires: q, k, v of one floating
// dtype and device, matching E and S (ShapeError).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt,
                                    Generator* gen = nullptr);

// The parameters of a multi-head attention (PyTorch's names). Packed: in_proj_weight [3E, E];
// separate (kdim or vdim != E): q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight
// [E, vdim]. in_proj_bias [3E], bias_k, bias_v [1, 1, E] and the biases may be undefined.
struct MultiheadAttentionWeights {
  Tensor in_proj_weight, in_proj_bias;
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;
  Tensor bias_k, bias_v;
  Tensor out_proj_weight, out_proj_bias;
};

struct MultiheadAttentionArgs {
  int64_t num_heads = 1;
  bool add_zero_attn = false;
  double dropout_p = 0.0;
  bool training = true;  // dropout only in training
  // [N, S] (or [S] unbatched): bool (True: ignore that key) or floating (added to the scores).
  Tensor key_padding_mask;
  // [L, S] or [N * num_heads, L, S]: bool (True: not allowed to attend) or floating (added).
  Tensor attn_mask;
  bool need_weights = true;
  bool average_attn_weights = true;  // the weights averaged over the heads: [N, L, S]
  Generator* gen = nullptr;
};

// query [L, N, E], key [S, N, kdim], value [S, N, vdim] (sequence first; or unbatched [L, E],
// ...). Returns the output [L, N, E] and, when need_weights, the attention weights [N, L, S]
// (averaged) or [N, num_heads, L, S] (undefined otherwise). requires: E divisible by num_heads,
// masks of the shapes above (ShapeError naming the expected shape), bool or floating masks
// (DTypeError).
std::pair<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key,
                                                       const Tensor& value,
                                                       const MultiheadAttentionWeights& w,
                                                       const MultiheadAttentionArgs& args);

}  // namespace ember

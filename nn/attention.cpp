#include "nn/attention.h"

#include "autograd/grad_mode.h"
#include "autograd/shape.h"
#include "nn/init.h"

namespace ember::nn {

MultiheadAttention::MultiheadAttention(int64_t e, int64_t h, double p, bool bias, bool add_bias_kv,
                                       bool zero_attn, int64_t kd, int64_t vd, bool first)
    : embed_dim(e),
      num_heads(h),
      kdim(kd > 0 ? kd : e),
      vdim(vd > 0 ? vd : e),
      head_dim(h > 0 ? e / h : 0),
      dropout(p),
      add_zero_attn(zero_attn),
      batch_first(first) {
  EMBER_CHECK_VALUE(e > 0 && h > 0 && e % h == 0, "MultiheadAttention: embed_dim (", e,
                    ") must be divisible by num_heads (", h, ")");
  EMBER_CHECK_VALUE(p >= 0 && p <= 1, "MultiheadAttention: dropout must be in [0, 1], got ", p);
  if (kdim == e && vdim == e) {
    Tensor w = empty({3 * e, e});
    in_proj_weight = register_parameter("in_proj_weight", init::xavier_uniform_(w));
  } else {
    Tensor q = empty({e, e}), k = empty({e, kdim}), v = empty({e, vdim});
    q_proj_weight = register_parameter("q_proj_weight", init::xavier_uniform_(q));
    k_proj_weight = register_parameter("k_proj_weight", init::xavier_uniform_(k));
    v_proj_weight = register_parameter("v_proj_weight", init::xavier_uniform_(v));
  }
  if (bias) in_proj_bias = register_parameter("in_proj_bias", zeros({3 * e}));
  out_proj = register_module("out_proj", std::make_shared<Linear>(e, e, bias));
  if (bias) {
    NoGradGuard no_grad;
    out_proj->bias.fill_(0.0);
  }
  if (add_bias_kv) {
    Tensor bk = empty({1, 1, e}), bv = empty({1, 1, e});
    bias_k = register_parameter("bias_k", init::xavier_normal_(bk));
    bias_v = register_parameter("bias_v", init::xavier_normal_(bv));
  }
}

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                      const Tensor& value,
                                                      const Tensor& key_padding_mask,
                                                      bool need_weights, const Tensor& attn_mask,
                                                      bool average_attn_weights) {
  const bool swap = batch_first && query.dim() == 3;
  auto seq_first = [swap](const Tensor& t) { return swap ? transpose(t, 0, 1) : t; };
  MultiheadAttentionWeights w;
  w.in_proj_weight = in_proj_weight;
  w.in_proj_bias = in_proj_bias;
  w.q_proj_weight = q_proj_weight;
  w.k_proj_weight = k_proj_weight;
  w.v_proj_weight = v_proj_weight;
  w.bias_k = bias_k;
  w.bias_v = bias_v;
  w.out_proj_weight = out_proj->weight;
  w.out_proj_bias = out_proj->bias;
  MultiheadAttentionArgs a;
  a.num_heads = num_heads;
  a.add_zero_attn = add_zero_attn;
  a.dropout_p = dropout;
  a.training = is_training();
  a.key_padding_mask = key_padding_mask;
  a.attn_mask = attn_mask;
  a.need_weights = need_weights;
  a.average_attn_weights = average_attn_weights;
  auto [out, weights] =
      multi_head_attention_forward(seq_first(query), seq_first(key), seq_first(value), w, a);
  return {seq_first(out), weights};
}

Tensor MultiheadAttention::forward(const Tensor& x) {
  return forward(x, x, x, Tensor(), false).first;
}

}  // namespace ember::nn

#include "autograd/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "autograd/dropout.h"
#include "autograd/elementwise.h"
#include "autograd/linear.h"
#include "autograd/matmul.h"
#include "autograd/reduce.h"
#include "autograd/shape.h"
#include "autograd/softmax.h"
#include "ops/checks.h"

namespace ember {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A mask as scores to add: a bool mask gives -inf where `blocked_when` and 0 elsewhere (in
// dtype t); a floating mask is added as it is. Not differentiated through a bool mask.
Tensor mask_bias(const char* op, const Tensor& mask, bool blocked_when, DType t) {
  if (mask.dtype() != kBool) {
    EMBER_CHECK_DTYPE(is_floating(mask.dtype()), op, ": expected a bool or floating mask, got ",
                      mask.dtype());
    return mask;
  }
  const Tensor blocked = full({}, -kInf, {t, mask.device()});
  const Tensor open = zeros({}, {t, mask.device()});
  return blocked_when ? where(mask, blocked, open) : where(mask, open, blocked);
}

void check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  ops::check_same_device(op, {&q, &k, &v});
  ops::check_floating(op, q);
  EMBER_CHECK_DTYPE(k.dtype() == q.dtype() && v.dtype() == q.dtype(), op,
                    ": expected query, key and value of one dtype, got ", q.dtype(), ", ",
                    k.dtype(), " and ", v.dtype());
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, Generator* gen) {
  const char* op = "scaled_dot_product_attention";
  check_qkv(op, q, k, v);
  EMBER_CHECK_SHAPE(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, op,
                    ": expected query, key and value of at least 2 dims, got ", q.shape(), ", ",
                    k.shape(), " and ", v.shape());
  EMBER_CHECK_SHAPE(q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2), op,
                    ": expected query [..., L, E], key [..., S, E] and value [..., S, Ev], got ",
                    q.shape(), ", ", k.shape(), " and ", v.shape());
  EMBER_CHECK_VALUE(!(is_causal && attn_mask.defined()), op,
                    ": an explicit attn_mask should not be set when is_causal is True");
  EMBER_CHECK_VALUE(dropout_p >= 0 && dropout_p <= 1, op, ": dropout_p must be in [0, 1], got ",
                    dropout_p);
  const int64_t l = q.size(-2), s = k.size(-2);
  const double factor = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  Tensor scores = mul(matmul(q, transpose(k, -2, -1)), factor);
  if (is_causal) {  // position i sees positions j <= i (the top-left aligned lower triangle)
    std::vector<double> tri(static_cast<size_t>(l * s));
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = 0; j < s; ++j) tri[i * s + j] = j <= i ? 0.0 : -kInf;
    scores = add(scores, from_vector(tri, {l, s}).to(q.device(), q.dtype()));
  } else if (attn_mask.defined()) {
    ops::check_same_device(op, {&q, &attn_mask});
    scores = add(scores, mask_bias(op, attn_mask, /*blocked_when=*/false, q.dtype()));
  }
  Tensor weights = softmax(scores, -1);
  if (dropout_p > 0) weights = dropout(weights, dropout_p, true, gen);
  return matmul(weights, v);
}

std::pair<Tensor, Tensor> multi_head_attention_forward(const Tensor& query_in, const Tensor& key_in,
                                                       const Tensor& value_in,
                                                       const MultiheadAttentionWeights& w,
                                                       const MultiheadAttentionArgs& a) {
  const char* op = "multi_head_attention_forward";
  check_qkv(op, query_in, key_in, value_in);
  const bool batched = query_in.dim() == 3;
  EMBER_CHECK_SHAPE((query_in.dim() == 3 || query_in.dim() == 2) &&
                        key_in.dim() == query_in.dim() && value_in.dim() == query_in.dim(),
                    op,
                    ": expected query, key and value of shape [L, N, E] (or unbatched [L, E]),"
                    " got ",
                    query_in.shape(), ", ", key_in.shape(), " and ", value_in.shape());
  const Tensor query = batched ? query_in : unsqueeze(query_in, 1);
  const Tensor key = batched ? key_in : unsqueeze(key_in, 1);
  const Tensor value = batched ? value_in : unsqueeze(value_in, 1);
  Tensor kpm = a.key_padding_mask;
  if (kpm.defined() && !batched) kpm = unsqueeze(kpm, 0);
  const int64_t tgt = query.size(0), bsz = query.size(1), e = query.size(2), h = a.num_heads;
  int64_t src = key.size(0);
  EMBER_CHECK_VALUE(h >= 1 && e % h == 0, op, ": embed_dim ", e, " is not divisible by num_heads ",
                    h);
  EMBER_CHECK_SHAPE(key.size(0) == value.size(0) && key.size(1) == bsz && value.size(1) == bsz, op,
                    ": key ", key.shape(), " and value ", value.shape(),
                    " must share the sequence and batch dims of a query ", query.shape());
  const int64_t hd = e / h;
  // The input projections: the packed weight's three row blocks, or the separate weights.
  auto part = [](const Tensor& t, int64_t i, int64_t n) {
    return t.defined() ? slice(t, 0, i * n, (i + 1) * n) : Tensor();
  };
  const bool packed = w.in_proj_weight.defined();
  Tensor q = linear(query, packed ? part(w.in_proj_weight, 0, e) : w.q_proj_weight,
                    part(w.in_proj_bias, 0, e));
  Tensor k = linear(key, packed ? part(w.in_proj_weight, 1, e) : w.k_proj_weight,
                    part(w.in_proj_bias, 1, e));
  Tensor v = linear(value, packed ? part(w.in_proj_weight, 2, e) : w.v_proj_weight,
                    part(w.in_proj_bias, 2, e));
  // Masks as scores to add: attn_mask [1 or N*H, L, S], key_padding_mask [N, 1, 1, S].
  Tensor bias;
  if (a.attn_mask.defined()) {
    const Tensor& m = a.attn_mask;
    const Shape want2{tgt, src}, want3{bsz * h, tgt, src};
    EMBER_CHECK_SHAPE((m.dim() == 2 && m.shape() == want2) || (m.dim() == 3 && m.shape() == want3),
                      op, ": expected attn_mask of shape ", want2, " or ", want3, ", got ",
                      m.shape());
    bias = mask_bias(op, m.dim() == 2 ? unsqueeze(m, 0) : m, true, q.dtype());
  }
  Tensor kpm_bias;
  if (kpm.defined()) {
    EMBER_CHECK_SHAPE(kpm.shape() == Shape({bsz, src}), op, ": expected key_padding_mask of shape ",
                      Shape({bsz, src}), ", got ", kpm.shape());
    kpm_bias = mask_bias(op, kpm, true, q.dtype());
  }
  // One more key (and value) position, with a 0 appended to the masks: add_bias_kv's learned
  // one, then add_zero_attn's zeros.
  auto widen_masks = [&] {
    if (bias.defined())
      bias = cat({bias, zeros({bias.size(0), tgt, 1}, {bias.dtype(), bias.device()})}, 2);
    if (kpm_bias.defined())
      kpm_bias = cat({kpm_bias, zeros({bsz, 1}, {kpm_bias.dtype(), kpm_bias.device()})}, 1);
    ++src;
  };
  if (w.bias_k.defined() && w.bias_v.defined()) {
    k = cat({k, expand(w.bias_k, {1, bsz, e})}, 0);
    v = cat({v, expand(w.bias_v, {1, bsz, e})}, 0);
    widen_masks();
  }
  // [len, N, E] -> [N * H, len, hd]
  auto heads = [&](const Tensor& t) {
    return transpose(reshape(t, {t.size(0), bsz * h, hd}), 0, 1);
  };
  q = heads(q), k = heads(k), v = heads(v);
  if (a.add_zero_attn) {
    k = cat({k, zeros({bsz * h, 1, hd}, {k.dtype(), k.device()})}, 1);
    v = cat({v, zeros({bsz * h, 1, hd}, {v.dtype(), v.device()})}, 1);
    widen_masks();
  }
  if (kpm_bias.defined()) {
    const Tensor per_head =
        reshape(expand(reshape(kpm_bias, {bsz, 1, 1, src}), {bsz, h, 1, src}), {bsz * h, 1, src});
    bias = bias.defined() ? add(bias, per_head) : per_head;
  }
  Tensor scores = matmul(mul(q, 1.0 / std::sqrt(static_cast<double>(hd))), transpose(k, 1, 2));
  if (bias.defined()) scores = add(scores, bias);
  Tensor weights = softmax(scores, -1);
  if (a.training && a.dropout_p > 0) weights = dropout(weights, a.dropout_p, true, a.gen);
  Tensor out = reshape(transpose(matmul(weights, v), 0, 1), {tgt * bsz, e});
  out = reshape(linear(out, w.out_proj_weight, w.out_proj_bias), {tgt, bsz, e});
  Tensor avg;
  if (a.need_weights) {
    avg = reshape(weights, {bsz, h, tgt, src});
    if (a.average_attn_weights) avg = mul(sum(avg, {1}), 1.0 / static_cast<double>(h));
    if (!batched) avg = squeeze(avg, 0);
  }
  if (!batched) out = squeeze(out, 1);
  return {out, avg};
}

}  // namespace ember

#include "nn/embedding.h"

#include <sstream>

#include "autograd/functions.h"
#include "autograd/grad_mode.h"
#include "nn/init.h"

namespace ember::nn {

Embedding::Embedding(int64_t num, int64_t dim, EmbeddingOptions opts)
    : num_embeddings(num), embedding_dim(dim), options(opts) {
  EMBER_CHECK_VALUE(num > 0 && dim > 0, "Embedding: num_embeddings and embedding_dim must be ",
                    "positive, got ", num, " and ", dim);
  if (options.padding_idx) {
    EMBER_CHECK_VALUE(*options.padding_idx >= -num && *options.padding_idx < num,
                      "Embedding: padding_idx ", *options.padding_idx, " must be within [", -num,
                      ", ", num, ")");
    if (*options.padding_idx < 0) *options.padding_idx += num;
  }
  EMBER_CHECK_VALUE(!options.max_norm || *options.max_norm > 0, "Embedding: max_norm must be ",
                    "positive, got ", options.max_norm.value_or(0));
  Tensor w = empty({num, dim});
  init::normal_(w, 0.0, 1.0);
  if (options.padding_idx) w.select(0, *options.padding_idx).zero_();
  weight = register_parameter("weight", w);
}

Tensor Embedding::forward(const Tensor& x) {
  if (options.max_norm) embedding_renorm_(weight, x, *options.max_norm, options.norm_type);
  return embedding(x, weight, options.padding_idx, options.scale_grad_by_freq);
}

std::string Embedding::extra_repr() const {
  std::ostringstream os;
  os << num_embeddings << ", " << embedding_dim;
  if (options.padding_idx) os << ", padding_idx=" << *options.padding_idx;
  if (options.max_norm) os << ", max_norm=" << *options.max_norm;
  if (options.norm_type != 2.0) os << ", norm_type=" << options.norm_type;
  if (options.scale_grad_by_freq) os << ", scale_grad_by_freq=True";
  return os.str();
}

Tensor& embedding_renorm_(Tensor& weight, const Tensor& x, double max_norm, double norm_type) {
  NoGradGuard no_grad;
  const Tensor rows = unique(x.dtype() == kInt64 ? x : x.to(kInt64)).values;
  const Tensor w = index_select(weight, 0, rows);
  const Tensor norms = vector_norm(w, norm_type, {1}, /*keepdim=*/true);
  const Tensor limit = full({}, max_norm, {w.dtype(), w.device()});
  // Rows over the limit scale by max_norm / (norm + 1e-7), as PyTorch.
  const Tensor scale = where(gt(norms, limit), div(limit, add(norms, 1e-7)),
                             ones({}, {w.dtype(), w.device()}));
  index_put_(weight, {rows}, mul(w, scale));
  return weight;
}

}  // namespace ember::nn

#include "nn/linear.h"

#include <cmath>

#include "autograd/functions.h"
#include "autograd/linear.h"
#include "nn/init.h"

namespace ember::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  EMBER_CHECK_VALUE(in > 0 && out > 0, "Linear: in_features and out_features must be positive, "
                    "got ", in, " and ", out);
  Tensor w = empty({out, in});
  init::kaiming_uniform_(w, std::sqrt(5.0));
  weight = register_parameter("weight", w);
  if (with_bias) {
    Tensor b = empty({out});
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    init::uniform_(b, -bound, bound);
    bias = register_parameter("bias", b);
  }
}

Tensor Linear::forward(const Tensor& x) {
  EMBER_CHECK_SHAPE(x.dim() >= 1 && x.shape().back() == in_features, "Linear(", in_features, ", ",
                    out_features, "): expected input with last dim ", in_features, ", got shape ",
                    x.shape());
  return linear(x, weight, bias);
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" +
         std::to_string(out_features) + ", bias=" + (bias.defined() ? "True" : "False");
}

Tensor Flatten::forward(const Tensor& x) {
  if (x.dim() == 0) return reshape(x, {1});
  int64_t s = wrap_dim(start_dim_, x.dim(), "Flatten"), e = wrap_dim(end_dim_, x.dim(), "Flatten");
  Shape out;
  for (int64_t d = 0; d < s; ++d) out.push_back(x.shape()[d]);
  int64_t m = 1;
  for (int64_t d = s; d <= e; ++d) m *= x.shape()[d];
  out.push_back(m);
  for (int64_t d = e + 1; d < x.dim(); ++d) out.push_back(x.shape()[d]);
  return reshape(x, out);
}

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim_) + ", end_dim=" + std::to_string(end_dim_);
}

}  // namespace ember::nn

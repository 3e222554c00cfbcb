// Differentiable matrix product (autograd/matmul.h), with NumPy's rules for 1-D operands.
#include "autograd/matmul.h"

#include "autograd/autocast.h"
#include "autograd/function.h"
#include "autograd/shape.h"
#include "ops/matmul.h"

namespace ember {

using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {
// matmul of operands with at least 2 dims each (batch dims broadcast).
Tensor matmul_nd(const Tensor& a, const Tensor& b) {
  return record("MatmulBackward", ops::matmul(a, b), {a, b}, {a, b},
                [](const Tensor& g, const Saved& s) {
                  Tensor ga = ops::matmul(g, s[1].transpose(-1, -2));
                  Tensor gb = ops::matmul(s[0].transpose(-1, -2), g);
                  return Grads{sum_to(ga, s[0].shape()), sum_to(gb, s[1].shape())};
                });
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (autocast_applies({&a, &b}))
    return autocast_call("matmul", {a, b}, [&](const auto& c) { return matmul(c[0], c[1]); });
  EMBER_CHECK_SHAPE(a.dim() >= 1 && b.dim() >= 1, "matmul: both operands need at least 1 dim, got ",
                    a.shape(), " and ", b.shape());
  // 1-D operands become a row (left) or a column (right), and the added dim is removed after.
  Tensor a2 = a.dim() == 1 ? reshape(a, {1, a.shape()[0]}) : a;
  Tensor b2 = b.dim() == 1 ? reshape(b, {b.shape()[0], 1}) : b;
  Tensor out = matmul_nd(a2, b2);
  if (a.dim() == 1 && b.dim() == 1) return reshape(out, {});
  if (a.dim() == 1) {
    Shape s(out.shape().begin(), out.shape().end());
    s.erase(s.end() - 2);
    return reshape(out, s);
  }
  if (b.dim() == 1) {
    Shape s(out.shape().begin(), out.shape().end() - 1);
    return reshape(out, s);
  }
  return out;
}

}  // namespace ember

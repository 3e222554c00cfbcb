// Reductions: dim normalisation, dtype rules, output allocation, then the device's reduce kernel
// over the input's kept and reduced dims (kernels/reduce_shape.h), read in place.
#include "ops/reduce.h"

#include <algorithm>

#include "ops/checks.h"
#include "ops/dispatch.h"

namespace ember::ops {

using kernels::ReduceOp;
using kernels::ReduceShape;

namespace {

// Maps `dims` (possibly negative; empty = all) to a sorted mask over a's dims.
std::vector<bool> reduced_mask(const Tensor& a, const std::vector<int64_t>& dims, const char* op) {
  const int64_t nd = a.dim();
  std::vector<bool> mask(static_cast<size_t>(nd), dims.empty());
  for (int64_t d : dims) {
    // A 0-D tensor accepts dim 0 and -1, as in PyTorch.
    const int64_t lo = nd == 0 ? -1 : -nd, hi = nd == 0 ? 0 : nd - 1;
    EMBER_CHECK_INDEX(d >= lo && d <= hi, op, ": dim ", d,
                      " is out of range for a tensor of shape ", a.shape(), " (expected a dim in ",
                      lo, "..", hi, ")");
    if (nd == 0) continue;
    const int64_t w = d < 0 ? d + nd : d;
    EMBER_CHECK_VALUE(!mask[w], op, ": dim ", d, " appears more than once in ", Shape(dims),
                      " (tensor of shape ", a.shape(), ")");
    mask[w] = true;
  }
  return mask;
}

// Appends dim (size, stride) to one side of `s`, merged into the previous dim of that side when
// the two are contiguous (so a contiguous input reduces as rows); false when kMaxDims are full.
bool push_dim(int& ndim, int64_t* sizes, int64_t* strides, int64_t size, int64_t stride) {
  if (size == 1) return true;
  if (ndim > 0 && strides[ndim - 1] == stride * size) {
    sizes[ndim - 1] *= size;
    strides[ndim - 1] = stride;
    return true;
  }
  if (ndim == kernels::kMaxDims) return false;
  sizes[ndim] = size, strides[ndim] = stride, ++ndim;
  return true;
}

bool reduce_shape(const Tensor& a, const std::vector<bool>& mask, ReduceShape& s) {
  for (int64_t d = 0; d < a.dim(); ++d) {
    const bool ok = mask[d] ? push_dim(s.reduced_ndim, s.reduced_sizes, s.reduced_strides,
                                       a.shape()[d], a.strides()[d])
                            : push_dim(s.kept_ndim, s.kept_sizes, s.kept_strides, a.shape()[d],
                                       a.strides()[d]);
    if (!ok) return false;
  }
  return true;
}

Tensor reduce(ReduceOp op, const char* name, const Tensor& a_in, const std::vector<bool>& mask,
              bool keepdim, int64_t correction = 1) {
  Shape out_shape;
  int64_t n_red = 1, n_out = 1;
  for (int64_t d = 0; d < a_in.dim(); ++d) {
    (mask[d] ? n_red : n_out) *= a_in.shape()[d];
    if (!mask[d] || keepdim) out_shape.push_back(mask[d] ? 1 : a_in.shape()[d]);
  }
  const bool extreme = op == ReduceOp::amax || op == ReduceOp::amin ||
                       op == ReduceOp::argmax || op == ReduceOp::argmin;
  EMBER_CHECK_VALUE(!(extreme && n_red == 0 && n_out > 0), name,
                    ": cannot reduce over an empty dim (tensor of shape ", a_in.shape(),
                    "); the result would have no value. Use sum for empty inputs or pick a "
                    "non-empty dim");
  Tensor out = empty(out_shape, {kernels::reduce_result_dtype(op, a_in.dtype()), a_in.device()});
  if (n_out == 0) return out;
  ReduceShape s;
  s.correction = correction;
  Tensor a = a_in;
  if (!reduce_shape(a, mask, s)) {
    // More dims than the kernels address: the kept dims first, then the reduced ones, as one
    // contiguous matrix.
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < a_in.dim(); ++d)
      if (!mask[d]) perm.push_back(d);
    for (int64_t d = 0; d < a_in.dim(); ++d)
      if (mask[d]) perm.push_back(d);
    a = a_in.permute(perm).contiguous().reshape({n_out, n_red});
    s = ReduceShape{};
    s.correction = correction;
    reduce_shape(a, {false, true}, s);
  }
  const kernels::KernelTable& k = kernels_for(a.device());
  const DataPtr ws = workspace(a.device(), k.reduce_workspace_bytes(op, a.dtype(), s));
  k.reduce(op, a.dtype(), s, a.data_ptr(), out.data_ptr(), ws.get(), stream_of(a.device()));
  return out;
}

void check_input(const char* op, const Tensor& a, bool floating_only) {
  EMBER_CHECK_DTYPE(!floating_only || is_floating(a.dtype()), op,
                    ": expected a floating tensor (float32, float64, float16 or bfloat16), got ",
                    a.dtype(), " of shape ", a.shape(), " (convert with .to(kFloat32))");
}

Tensor reduce_dims(ReduceOp op, const char* name, const Tensor& a,
                   const std::vector<int64_t>& dims, bool keepdim, bool floating_only,
                   int64_t correction = 1) {
  check_input(name, a, floating_only);
  return reduce(op, name, a, reduced_mask(a, dims, name), keepdim, correction);
}

Tensor arg_reduce(ReduceOp op, const char* name, const Tensor& a, int64_t dim, bool keepdim) {
  check_input(name, a, false);
  std::vector<int64_t> dims;
  if (dim != kAllDims) dims.push_back(dim);
  return reduce(op, name, a, reduced_mask(a, dims, name), keepdim);
}

}  // namespace

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_dims(ReduceOp::sum, "sum", a, dims, keepdim, false);
}
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_dims(ReduceOp::mean, "mean", a, dims, keepdim, true);
}
Tensor amax(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_dims(ReduceOp::amax, "amax", a, dims, keepdim, false);
}
Tensor amin(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_dims(ReduceOp::amin, "amin", a, dims, keepdim, false);
}
Tensor var(const Tensor& a, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return reduce_dims(ReduceOp::var, "var", a, dims, keepdim, true, correction);
}
Tensor std(const Tensor& a, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return reduce_dims(ReduceOp::std, "std", a, dims, keepdim, true, correction);
}
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim) {
  return arg_reduce(ReduceOp::argmax, "argmax", a, dim, keepdim);
}
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim) {
  return arg_reduce(ReduceOp::argmin, "argmin", a, dim, keepdim);
}

}  // namespace ember::ops

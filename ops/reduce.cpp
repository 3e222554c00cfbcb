// Reductions: dim normalisation, dtype rules, output allocation, then kernels/cpu/reduce or, on
// cuda/emu, the GPU table's row reduction over the input with its reduced dims permuted last.
#include "ops/reduce.h"

#include <algorithm>

#include "kernels/cpu/reduce.h"
#include "ops/checks.h"
#include "ops/gpu_kernels.h"

namespace ember::ops {

namespace kc = kernels::cpu;

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

Tensor reduce(kc::ReduceOp op, const char* name, const Tensor& a, const std::vector<bool>& mask,
              bool keepdim, int64_t correction = 1) {
  kc::ReduceShape s;
  s.correction = correction;
  Shape out_shape;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (mask[d]) {
      s.reduced_sizes.push_back(a.shape()[d]);
      s.reduced_strides.push_back(a.strides()[d]);
      if (keepdim) out_shape.push_back(1);
    } else {
      s.kept_sizes.push_back(a.shape()[d]);
      s.kept_strides.push_back(a.strides()[d]);
      out_shape.push_back(a.shape()[d]);
    }
  }
  const bool extreme = op == kc::ReduceOp::amax || op == kc::ReduceOp::amin ||
                       op == kc::ReduceOp::argmax || op == kc::ReduceOp::argmin;
  int64_t n_red = 1, n_out = 1;
  for (int64_t v : s.reduced_sizes) n_red *= v;
  for (int64_t v : s.kept_sizes) n_out *= v;
  EMBER_CHECK_VALUE(!(extreme && n_red == 0 && n_out > 0), name,
                    ": cannot reduce over an empty dim (tensor of shape ", a.shape(),
                    "); the result would have no value. Use sum for empty inputs or pick a "
                    "non-empty dim");
  Tensor out = empty(out_shape, {kc::reduce_result_dtype(op, a.dtype()), a.device()});
  if (n_out == 0) return out;
  if (a.device().is_gpu_like()) {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < a.dim(); ++d)
      if (!mask[d]) perm.push_back(d);
    for (int64_t d = 0; d < a.dim(); ++d)
      if (mask[d]) perm.push_back(d);
    const Tensor rows = a.permute(perm).contiguous();
    static_assert(static_cast<int>(kc::ReduceOp::std) ==
                  static_cast<int>(gpu_types::ReduceOp::std));
    gpu_kernels(a.device())
        .reduce_rows(static_cast<gpu_types::ReduceOp>(op), gpu_scalar(a.dtype(), name), n_out,
                     n_red, correction, rows.data_ptr(), out.data_ptr(), nullptr);
    return out;
  }
  kc::reduce_cpu(op, a.dtype(), s, a.data_ptr(), out.data_ptr());
  return out;
}

void check_input(const char* op, const Tensor& a, bool floating_only) {
  check_cpu_dtype(op, a.dtype());  // the GPU reductions take the same dtypes
  EMBER_CHECK_DTYPE(!floating_only || is_floating(a.dtype()), op,
                    ": expected a float32 or float64 tensor, got ", a.dtype(), " of shape ",
                    a.shape(), " (convert with .to(kFloat32))");
}

Tensor reduce_dims(kc::ReduceOp op, const char* name, const Tensor& a,
                   const std::vector<int64_t>& dims, bool keepdim, bool floating_only,
                   int64_t correction = 1) {
  check_input(name, a, floating_only);
  return reduce(op, name, a, reduced_mask(a, dims, name), keepdim, correction);
}

Tensor arg_reduce(kc::ReduceOp op, const char* name, const Tensor& a, int64_t dim, bool keepdim) {
  check_input(name, a, false);
  std::vector<int64_t> dims;
  if (dim != kAllDims) dims.push_back(dim);
  return reduce(op, name, a, reduced_mask(a, dims, name), keepdim);
}

}  // namespace

Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_dims(kc::ReduceOp::sum, "sum", a, dims, keepdim, false);
}
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_dims(kc::ReduceOp::mean, "mean", a, dims, keepdim, true);
}
Tensor amax(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_dims(kc::ReduceOp::amax, "amax", a, dims, keepdim, false);
}
Tensor amin(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_dims(kc::ReduceOp::amin, "amin", a, dims, keepdim, false);
}
Tensor var(const Tensor& a, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return reduce_dims(kc::ReduceOp::var, "var", a, dims, keepdim, true, correction);
}
Tensor std(const Tensor& a, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return reduce_dims(kc::ReduceOp::std, "std", a, dims, keepdim, true, correction);
}
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim) {
  return arg_reduce(kc::ReduceOp::argmax, "argmax", a, dim, keepdim);
}
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim) {
  return arg_reduce(kc::ReduceOp::argmin, "argmin", a, dim, keepdim);
}

}  // namespace ember::ops

// Sorting: the sorted dim is moved last and made contiguous (rows of keys), sorted by the device's
// sort_rows kernel, and moved back. topk, kthvalue, unique and randperm are built on it.
#include "ops/sort.h"

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/reduce.h"
#include "ops/scan.h"

namespace ember::ops {
namespace {

void check_sortable(const char* op, const Tensor& x) {
  const Device dev = x.device();
  if (dev.is_cpu()) return;
  check_compute_dtype(op, x.dtype(), dev);
}

// Sorts along dim d of x; values are skipped (left undefined) when !want_values.
SortResult sort_along(const char* op, const Tensor& x, int64_t d, bool descending,
                      bool want_values) {
  check_sortable(op, x);
  const Device dev = x.device();
  if (x.dim() == 0) {
    return {want_values ? x.clone() : Tensor(), zeros({}, {kInt64, dev})};
  }
  const int64_t last = x.dim() - 1;
  const Tensor rows = x.transpose(d, last).contiguous();
  kernels::SortShape s;
  s.n = rows.size(last);
  s.rows = s.n == 0 ? 0 : rows.numel() / s.n;
  s.descending = descending;
  Tensor values = want_values ? empty(rows.shape(), {x.dtype(), dev}) : Tensor();
  Tensor indices = empty(rows.shape(), {kInt64, dev});
  if (rows.numel() > 0) {
    const kernels::KernelTable& k = kernels_for(dev);
    const size_t ws_bytes = k.sort_workspace_bytes(x.dtype(), s);
    const DataPtr ws = workspace(dev, ws_bytes);
    k.sort_rows(x.dtype(), s, rows.data_ptr(), want_values ? values.data_ptr() : nullptr,
                indices.data<int64_t>(), ws.get(), ws_bytes,
                stream_of(dev));
  }
  auto back = [&](const Tensor& t) { return t.defined() ? t.transpose(d, last).contiguous() : t; };
  return {back(values), back(indices)};
}

}  // namespace

SortResult sort(const Tensor& x, int64_t dim, bool descending) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "sort");
  return sort_along("sort", x, d, descending, true);
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "argsort");
  return sort_along("argsort", x, d, descending, false).indices;
}

SortResult topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "topk");
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  EMBER_CHECK_INDEX(k >= 0 && k <= n, "topk: k (", k, ") is out of range for dimension ", d,
                    " of size ", n);
  SortResult r = sort_along("topk", x, d, largest, true);
  if (x.dim() == 0) return r;
  return {r.values.slice(d, 0, k).contiguous(), r.indices.slice(d, 0, k).contiguous()};
}

SortResult kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "kthvalue");
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  EMBER_CHECK_INDEX(k >= 1 && k <= n, "kthvalue: k (", k, ") is out of range for dimension ", d,
                    " of size ", n, " (expected 1 <= k <= ", n, ")");
  SortResult r = sort_along("kthvalue", x, d, false, true);
  if (x.dim() == 0) return r;
  auto pick = [&](const Tensor& t) {
    Tensor v = t.slice(d, k - 1, k);
    return (keepdim ? v : v.squeeze(d)).contiguous();
  };
  return {pick(r.values), pick(r.indices)};
}

namespace {

// Sorted rows of a [n, m] tensor in lexicographic order: m stable sorts, the last column first.
Tensor lexicographic_order(const Tensor& rows) {
  const Device dev = rows.device();
  Tensor order = arange(rows.size(0), {kInt64, dev});
  for (int64_t c = rows.size(1) - 1; c >= 0; --c) {
    const Tensor col = index(rows.select(1, c), {order});
    order = index(order, {argsort(col, 0)});
  }
  return order;
}

}  // namespace

UniqueResult unique(const Tensor& x, bool return_inverse, bool return_counts,
                    std::optional<int64_t> dim) {
  check_sortable("unique", x);
  const Device dev = x.device();
  // Rows to make distinct: the elements (flattened) or the slices along dim.
  Tensor rows;
  int64_t d = 0;
  if (dim) {
    EMBER_CHECK_INDEX(x.dim() > 0, "unique: dim given for a 0-d tensor");
    d = wrap_dim(*dim, x.dim(), "unique");
    rows = x.transpose(0, d).contiguous();
    rows = rows.reshape({rows.size(0), rows.size(0) == 0 ? 0 : rows.numel() / rows.size(0)});
  } else {
    rows = x.reshape({x.numel(), 1});
  }
  const int64_t n = rows.size(0);
  const Tensor order = rows.size(1) == 1 ? argsort(rows.select(1, 0), 0) : lexicographic_order(rows);
  const Tensor sorted = index(rows, {order});
  // A row starts a group when it differs from the one before (NaN differs from itself).
  Tensor starts = ones({n}, {kBool, dev});
  if (n > 1) {
    const Tensor differs = sum(ne(sorted.slice(0, 1, n), sorted.slice(0, 0, n - 1)), {1});
    starts.slice(0, 1, n).copy_(gt(differs, zeros({}, {kInt64, dev})));
  }
  const Tensor first = nonzero(starts).select(1, 0).contiguous();  // one wait: the group count
  UniqueResult r;
  Tensor values = index(sorted, {first});
  if (dim) {
    Shape s = x.transpose(0, d).shape();
    s[0] = values.size(0);
    values = values.reshape(s).transpose(0, d).contiguous();
  } else {
    values = values.reshape({values.size(0)});
  }
  r.values = values;
  if (return_inverse) {
    const Tensor group = sub(cumsum(starts, 0), ones({}, {kInt64, dev}));
    Tensor inverse = empty({n}, {kInt64, dev});
    index_put_(inverse, {order}, group, false);
    r.inverse = dim ? inverse : inverse.reshape(x.shape());
  }
  if (return_counts) {
    // Group g runs from first[g] to first[g + 1] (or n for the last).
    const int64_t g = first.size(0);
    Tensor ends = full({g}, static_cast<double>(n), {kInt64, dev});
    if (g > 1) ends.slice(0, 0, g - 1).copy_(first.slice(0, 1, g));
    r.counts = sub(ends, first);
  }
  return r;
}

}  // namespace ember::ops

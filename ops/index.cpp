// Indexing through integer tensors: every op here describes its access as an IndexPlan (the
// iteration space, each operand's strides over it, the dims the index tensors address) and makes
// one call to the device's index_gather or index_scatter (kernels/index_shape.h).
#include "ops/index.h"

#include <algorithm>

#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "ops/scan.h"

namespace ember::ops {
namespace {

using kernels::IndexedDims;
using kernels::IndexIteration;
using kernels::IndexPointers;
using kernels::ScatterMode;

constexpr int kOps = 2 + kMaxDims;

// An indexing access. Operand 0 is the data tensor that is not indexed (a gather's output, a
// scatter's source), filled in by the caller; operand 1 the indexed tensor; 2.. the index tensors.
struct IndexPlan {
  Shape shape;                        // the iteration space, row-major
  std::array<Shape, kOps> strides;    // per operand, over `shape`
  IndexedDims dims;
  std::vector<Tensor> index;          // the index tensors, int64 on the device
  std::vector<int64_t> indexed_dim;   // the dim of the indexed tensor each one addresses

  explicit IndexPlan(Shape s) : shape(std::move(s)) {
    for (Shape& st : strides) st.assign(shape.size(), 0);
  }
  void add_index(const Tensor& t, int64_t dim, int64_t size, int64_t stride) {
    const int k = dims.count++;
    dims.sizes[k] = size;
    dims.strides[k] = stride;
    index.push_back(t);
    indexed_dim.push_back(dim);
  }
};

// Note [Index checks]
// An index out of range is never followed: the kernel skips it and records the smallest position
// that had one in a fault word on the device (kernels/index_shape.h). The op reads the word back
// and raises IndexError naming the index, the dim and its size, the same message on every device.
// On a GPU that read is one wait for the device per indexing op; the backward passes, whose
// indices the forward checked, skip it.
class FaultWord {
 public:
  explicit FaultWord(Device d) : word_(zeros({1}, {kInt64, d})) {}
  uint64_t* ptr() const { return reinterpret_cast<uint64_t*>(word_.data_ptr()); }
  // The position that faulted, or -1.
  int64_t position() const {
    const uint64_t f = static_cast<uint64_t>(word_.to_vector<int64_t>()[0]);
    return f == 0 ? -1 : static_cast<int64_t>(~f);
  }

 private:
  Tensor word_;
};

[[noreturn]] void report_fault(const char* op, const IndexPlan& plan, int64_t position) {
  // The index tensors' offsets at that position, from its coordinates.
  std::vector<int64_t> off(plan.index.size(), 0);
  for (int64_t d = static_cast<int64_t>(plan.shape.size()) - 1, r = position; d >= 0; --d) {
    const int64_t c = r % plan.shape[d];
    r /= plan.shape[d];
    for (size_t k = 0; k < off.size(); ++k) off[k] += c * plan.strides[2 + k][d];
  }
  for (size_t k = 0; k < off.size(); ++k) {
    const Tensor& t = plan.index[k];
    const int64_t v = static_cast<int64_t>(t.as_strided({}, {}, t.offset() + off[k]).item());
    const int64_t n = plan.dims.sizes[k];
    if (v < -n || v >= n)
      EMBER_THROW(IndexError, op, ": index ", v, " is out of bounds for dimension ",
                  plan.indexed_dim[k], " with size ", n);
  }
  EMBER_THROW(IndexError, op, ": an index is out of bounds");
}

IndexIteration iteration(const char* op, const IndexPlan& plan, IndexPointers& ptrs) {
  IndexIteration it;
  EMBER_CHECK_SHAPE(make_strided_index<kOps>(plan.shape, plan.strides, it), op,
                    ": an indexing access over ", plan.shape, " needs more than ", kMaxDims,
                    " dims after merging; reshape the tensors first");
  for (size_t k = 0; k < plan.index.size(); ++k) ptrs.p[k] = plan.index[k].data<int64_t>();
  return it;
}

// out = the indexed tensor x read through `plan`, a new contiguous tensor of plan.shape.
Tensor run_gather(const char* op, const Tensor& x, IndexPlan& plan, bool check) {
  const Device dev = x.device();
  Tensor out = empty(plan.shape, {x.dtype(), dev});
  if (out.numel() == 0) return out;
  plan.strides[0] = out.strides();
  IndexPointers ptrs;
  const IndexIteration it = iteration(op, plan, ptrs);
  FaultWord fault(dev);
  kernels_for(dev).index_gather(static_cast<int>(x.element_size()), it, plan.dims, ptrs,
                                out.data_ptr(), x.data_ptr(), fault.ptr(), stream_of(dev));
  if (!check) return out;
  if (const int64_t p = fault.position(); p >= 0) report_fault(op, plan, p);
  return out;
}

// dst read through `plan` = (+=) src, src broadcast to plan.shape; `check` reads the fault word.
void run_scatter(const char* op, const Tensor& dst, const Tensor& src, IndexPlan& plan,
                 bool accumulate, bool check) {
  const Device dev = dst.device();
  if (checked_numel(plan.shape) == 0) return;
  if (accumulate) check_compute_dtype(op, dst.dtype(), dev);
  plan.strides[0] = broadcast_strides(src, plan.shape);
  IndexPointers ptrs;
  const IndexIteration it = iteration(op, plan, ptrs);
  FaultWord fault(dev);
  const kernels::KernelTable& k = kernels_for(dev);
  const size_t ws_bytes = k.index_scatter_workspace_bytes(it);
  const DataPtr ws = workspace(dev, ws_bytes);
  k.index_scatter(accumulate ? ScatterMode::add : ScatterMode::assign, dst.dtype(), it, plan.dims,
                  ptrs, dst.data_ptr(), src.data_ptr(), fault.ptr(),
                  ws.get(), ws_bytes,
                  stream_of(dev));
  dst.bump_version();
  if (!check) return;
  if (const int64_t p = fault.position(); p >= 0) report_fault(op, plan, p);
}

void check_index_tensor(const char* op, const Tensor& x, const Tensor& index) {
  check_same_device(op, {&x, &index});
  EMBER_CHECK_DTYPE(index.dtype() == kInt64, op, ": expected an index tensor of dtype int64, got ",
                    index.dtype());
}

// x[indices] as a plan over the result's shape (operands 1.. filled).
IndexPlan advanced_plan(const char* op, const Tensor& x, std::vector<Tensor> indices) {
  // Bool and uint8 masks become one index tensor per dim they cover.
  std::vector<Tensor> flat;
  for (const Tensor& t : indices) {
    if (t.defined() && (t.dtype() == kBool || t.dtype() == kUInt8)) {
      const int64_t first = static_cast<int64_t>(flat.size());
      for (int64_t d = 0; d < t.dim(); ++d) {
        EMBER_CHECK_INDEX(first + d < x.dim() && t.size(d) == x.size(first + d), op,
                          ": the shape of the mask ", t.shape(), " at index ", first + d,
                          " does not match the shape of the indexed tensor ", x.shape());
      }
      for (Tensor& i : mask_indices(t.dtype() == kBool ? t : ne(t, zeros({}, {kUInt8, t.device()}))))
        flat.push_back(i);
    } else {
      flat.push_back(t);
    }
  }
  EMBER_CHECK_INDEX(static_cast<int64_t>(flat.size()) <= x.dim(), op, ": too many indices (",
                    flat.size(), ") for a tensor of dimension ", x.dim());
  Shape b;
  int64_t first = -1, last = -1;
  for (size_t d = 0; d < flat.size(); ++d) {
    if (!flat[d].defined()) continue;
    check_index_tensor(op, x, flat[d]);
    b = first < 0 ? flat[d].shape() : broadcast_shapes(b, flat[d].shape(), op);
    if (first < 0) first = static_cast<int64_t>(d);
    last = static_cast<int64_t>(d);
  }
  EMBER_CHECK_VALUE(first >= 0, op, ": expected at least one index tensor");
  bool adjacent = true;
  for (int64_t d = first; d <= last; ++d) adjacent &= flat[d].defined();
  // The result: kept dims before, B, kept dims after (adjacent); else B, then the kept dims.
  Shape shape;
  const int64_t b_at = adjacent ? first : 0;
  std::vector<int64_t> dim_of;  // x's dim behind each result dim (-1: a B dim)
  auto add_kept = [&](int64_t d) {
    shape.push_back(x.size(d));
    dim_of.push_back(d);
  };
  auto add_b = [&] {
    for (int64_t s : b) {
      shape.push_back(s);
      dim_of.push_back(-1);
    }
  };
  auto is_indexed = [&](int64_t d) {
    return d < static_cast<int64_t>(flat.size()) && flat[d].defined();
  };
  if (!adjacent) add_b();
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (adjacent && d == first) add_b();
    if (!is_indexed(d)) add_kept(d);
  }
  IndexPlan plan(shape);
  for (size_t r = 0; r < shape.size(); ++r)
    if (dim_of[r] >= 0) plan.strides[1][r] = x.stride(dim_of[r]);
  for (int64_t d = first; d <= last; ++d) {
    if (!flat[d].defined()) continue;
    const int k = plan.dims.count;
    plan.add_index(flat[d], d, x.size(d), x.stride(d));
    // The index's strides over B, placed at B's dims of the result.
    const Shape st = broadcast_strides(flat[d], b);
    for (size_t j = 0; j < b.size(); ++j) plan.strides[2 + k][b_at + j] = st[j];
  }
  return plan;
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<Tensor>& indices, bool check) {
  IndexPlan plan = advanced_plan("index", x, indices);
  return run_gather("index", x, plan, check);
}

void index_put_(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                bool accumulate, bool check) {
  const char* op = accumulate ? "index_put_ (accumulate)" : "index_put_";
  check_same_device(op, {&x, &values});
  EMBER_CHECK_DTYPE(values.dtype() == x.dtype(), op, ": values of dtype ", values.dtype(),
                    " cannot be put into a tensor of dtype ", x.dtype(), "; convert them first");
  IndexPlan plan = advanced_plan(op, x, indices);
  EMBER_CHECK_SHAPE(values.dim() <= static_cast<int64_t>(plan.shape.size()) &&
                        broadcast_shapes(values.shape(), plan.shape, op) == plan.shape,
                    op, ": values of shape ", values.shape(),
                    " do not broadcast to the indexed shape ", plan.shape);
  run_scatter(op, x, values, plan, accumulate, check);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, bool check) {
  check_index_tensor("index_select", x, index);
  EMBER_CHECK_SHAPE(index.dim() <= 1, "index_select: expected a 1-D index tensor, got shape ",
                    index.shape());
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "index_select");
  const Tensor xs = x.dim() == 0 ? x.reshape({1}) : x;
  std::vector<Tensor> indices(static_cast<size_t>(d) + 1);
  indices[d] = index.reshape({index.numel()});
  IndexPlan plan = advanced_plan("index_select", xs, indices);
  Tensor out = run_gather("index_select", xs, plan, check);
  return x.dim() == 0 ? out.reshape({}) : out;
}

namespace {

// gather/scatter along `dim` with `index` of the same number of dims: the iteration space is
// index's shape; the indexed tensor t contributes its strides outside `dim`.
IndexPlan along_dim_plan(const char* op, const Tensor& t, int64_t dim, const Tensor& index) {
  check_index_tensor(op, t, index);
  const int64_t nd = std::max<int64_t>(t.dim(), 1);
  const int64_t d = wrap_dim(dim, nd, op);
  const Tensor tt = t.dim() == 0 ? t.reshape({1}) : t;
  const Tensor ix = index.dim() == 0 ? index.reshape({1}) : index;
  EMBER_CHECK_SHAPE(ix.dim() == tt.dim(), op, ": index tensor must have the same number of dims ",
                    "as the tensor (", tt.dim(), "), got index of shape ", index.shape());
  for (int64_t k = 0; k < tt.dim(); ++k)
    EMBER_CHECK_SHAPE(k == d || ix.size(k) <= tt.size(k), op, ": index of shape ", index.shape(),
                      " is larger than the tensor of shape ", t.shape(), " at dim ", k,
                      " (only dim ", d, " may be larger)");
  IndexPlan plan(ix.shape());
  for (int64_t k = 0; k < tt.dim(); ++k)
    if (k != d) plan.strides[1][k] = tt.stride(k);
  plan.add_index(ix, d, tt.size(d), tt.stride(d));
  plan.strides[2] = ix.strides();
  return plan;
}

}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, bool check) {
  IndexPlan plan = along_dim_plan("gather", x, dim, index);
  Tensor out = run_gather("gather", x.dim() == 0 ? x.reshape({1}) : x, plan, check);
  return index.dim() == 0 ? out.reshape({}) : out;
}

void scatter_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
              bool accumulate, bool check) {
  const char* op = accumulate ? "scatter_add_" : "scatter_";
  check_same_device(op, {&x, &src});
  EMBER_CHECK_DTYPE(src.dtype() == x.dtype(), op, ": expected src of dtype ", x.dtype(),
                    " (the tensor's), got ", src.dtype());
  IndexPlan plan = along_dim_plan(op, x, dim, index);
  const Tensor s = src.dim() == 0 ? src.reshape({1}) : src;
  EMBER_CHECK_SHAPE(s.dim() == static_cast<int64_t>(plan.shape.size()), op,
                    ": expected src with ", plan.shape.size(), " dims, got shape ", src.shape());
  for (size_t k = 0; k < plan.shape.size(); ++k)
    EMBER_CHECK_SHAPE(plan.shape[k] <= s.size(static_cast<int64_t>(k)), op, ": index of shape ",
                      index.shape(), " is larger than src of shape ", src.shape(), " at dim ", k);
  // src is read at the index's positions: its own strides, not a broadcast.
  const Tensor sv = s.as_strided(plan.shape, s.strides(), s.offset());
  run_scatter(op, x.dim() == 0 ? x.reshape({1}) : x, sv, plan, accumulate, check);
}

void index_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                bool check) {
  const char* op = "index_add_";
  check_index_tensor(op, x, index);
  check_same_device(op, {&x, &src});
  EMBER_CHECK_DTYPE(src.dtype() == x.dtype(), op, ": expected src of dtype ", x.dtype(),
                    " (the tensor's), got ", src.dtype());
  EMBER_CHECK_SHAPE(index.dim() <= 1, op, ": expected a 1-D index tensor, got shape ",
                    index.shape());
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
  const Tensor xs = x.dim() == 0 ? x.reshape({1}) : x;
  const Tensor ss = src.dim() == 0 ? src.reshape({1}) : src;
  Shape want = xs.shape();
  want[d] = index.numel();
  EMBER_CHECK_SHAPE(ss.shape() == want, op, ": expected src of shape ", want, " for a tensor of ",
                    "shape ", x.shape(), " and ", index.numel(), " indices, got ", src.shape());
  IndexPlan plan(want);
  for (int64_t k = 0; k < xs.dim(); ++k)
    if (k != d) plan.strides[1][k] = xs.stride(k);
  const Tensor ix = index.reshape({index.numel()});
  plan.add_index(ix, d, xs.size(d), xs.stride(d));
  plan.strides[2][d] = ix.stride(0);
  run_scatter(op, xs, ss, plan, true, check);
}

// Note [Sizes from data]
// nonzero, masked_select and unique return as many elements as the data says, so the op reads a
// count back from the device before it can allocate the result: one wait per call on a GPU, as in
// PyTorch. The count is the last element of an inclusive scan of the flags, which then gives each
// flagged element its row of the result.
Tensor nonzero(const Tensor& x) {
  const Device dev = x.device();
  EMBER_CHECK_SHAPE(x.dim() <= kernels::kMaxNonzeroDims, "nonzero: at most ",
                    kernels::kMaxNonzeroDims, " dims, got a tensor of shape ", x.shape());
  const int64_t n = x.numel();
  const Tensor flags = x.dtype() == kBool ? x.contiguous() : ne(x, zeros({}, {x.dtype(), dev}));
  const Tensor prefix = cumsum(flags.reshape({n}), 0);
  const int64_t count =
      n == 0 ? 0 : static_cast<int64_t>(prefix.as_strided({}, {}, prefix.offset() + n - 1).item());
  Tensor out = empty({count, x.dim()}, {kInt64, dev});
  if (count == 0 || x.dim() == 0) return out;
  kernels::NonzeroShape s;
  s.ndim = static_cast<int>(x.dim());
  for (int64_t d = 0; d < x.dim(); ++d) s.sizes[d] = x.size(d);
  kernels_for(dev).nonzero_coords(s, n, prefix.data<int64_t>(), out.data<int64_t>(),
                                  stream_of(dev));
  return out;
}

std::vector<Tensor> mask_indices(const Tensor& mask) {
  EMBER_CHECK_DTYPE(mask.dtype() == kBool, "mask: expected a bool tensor, got ", mask.dtype());
  const Tensor nz = nonzero(mask);
  std::vector<Tensor> out;
  for (int64_t d = 0; d < mask.dim(); ++d) out.push_back(nz.select(1, d).contiguous());
  return out;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  check_same_device("masked_select", {&x, &mask});
  EMBER_CHECK_DTYPE(mask.dtype() == kBool, "masked_select: expected a bool mask, got ",
                    mask.dtype());
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  const int64_t n = checked_numel(shape);
  const Tensor flat = mask.expand(shape).contiguous().reshape({n});
  return index(x.expand(shape).reshape({n}), {nonzero(flat).select(1, 0).contiguous()});
}

}  // namespace ember::ops

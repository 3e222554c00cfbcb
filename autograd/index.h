// Indexing as x[1, 2:5, None, ..., idx] in Python: integers, slices, new axes and an ellipsis
// (basic indexing: a view of x), and int64 index tensors and bool masks (advanced indexing: a
// copy), mixed in any order, as PyTorch does it; reading (index) and writing (index_put_), and
// the other ways of reading and writing through index tensors: index_select, gather, scatter,
// index_add, take_along_dim, masked_select, masked_fill. All differentiable.
//
//   index(x, {1, Slice{2, 5}, kNewAxis, kEllipsis})   // x[1, 2:5, None, ...]
//   index(x, {kEllipsis, Slice{{}, {}, 2}})            // x[..., ::2]
//   index(x, {Slice{}, idx})                           // x[:, idx], idx an int64 tensor
//   index_put_(x, {mask}, zeros({}))                   // x[mask] = 0
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

// start:stop:step. An absent start or stop means the start or the end of the dim; negative
// values count from the end; both clamp to the dim, as in Python.
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
};
// A new dim of size 1 (Python's None).
struct NewAxis {};
// As many full slices as the dims the other items leave unnamed (Python's ...).
struct Ellipsis {};
inline constexpr NewAxis kNewAxis{};
inline constexpr Ellipsis kEllipsis{};

// One item of an index: an integer (selects one element of a dim and removes the dim), a Slice,
// kNewAxis, kEllipsis, or a tensor: int64 indices into one dim, or a bool mask over as many dims
// as it has.
class TensorIndex {
 public:
  enum class Kind { kInteger, kSlice, kNewAxis, kEllipsis, kTensor };
  TensorIndex(int64_t i) : kind_(Kind::kInteger), integer_(i) {}  // NOLINT: reads as x[1]
  TensorIndex(Slice s) : kind_(Kind::kSlice), slice_(s) {}        // NOLINT
  TensorIndex(NewAxis) : kind_(Kind::kNewAxis) {}                 // NOLINT
  TensorIndex(Ellipsis) : kind_(Kind::kEllipsis) {}               // NOLINT
  TensorIndex(Tensor t) : kind_(Kind::kTensor), tensor_(std::move(t)) {}  // NOLINT

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }
  // The dims of x this item consumes: 1 for an integer, a slice or an index tensor, a mask's
  // number of dims, 0 for kNewAxis and kEllipsis.
  int64_t dims_consumed() const;

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  Tensor tensor_;
};

// requires: at most one kEllipsis, and no more dims consumed than x has (IndexError); integers
//           and index values in [-size, size) of their dim (IndexError naming the index and the
//           size); slice steps > 0 (ValueError, as PyTorch); index tensors int64, masks bool of
//           the shape of the dims they cover (IndexError), on x's device.
// ensures:  integers and slices first make a view of x, left to right; then the tensors index
//           that view (ops::index's rule places the indexed dims). Without tensors the result is
//           a view of x, else a new tensor. The gradient goes to the elements read (summed over
//           repeated indices), zeros elsewhere.
Tensor index(const Tensor& x, const std::vector<TensorIndex>& items);

// x[items] = values, in place (values broadcast to x[items]'s shape and converted to x's dtype);
// with accumulate, x[items] += values, repeated indices adding up (Note [Scatter order] in
// ops/index.h). Under autograd, x's history is rebased as for every in-place op
// (autograd/inplace.h). Returns x.
Tensor& index_put_(Tensor& x, const std::vector<TensorIndex>& items, const Tensor& values,
                   bool accumulate = false);

// The other indexing functions, with PyTorch's semantics (ops/index.h); differentiable in x and
// in the values or src written (never in the indices).
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// x broadcast with indices except along dim, then gathered; without dim, x.flatten()[indices].
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim);
Tensor masked_select(const Tensor& x, const Tensor& mask);
// Out-of-place: x with src (or a scalar) written at index along dim (scatter) or added (add).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 double alpha = 1.0);
// x with the values at indices replaced (or increased, accumulate) by values.
Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& items, const Tensor& values,
                 bool accumulate = false);
// Rows of weight ([num, dim]) picked by the int64 indices in input: input's shape + [dim]. The
// gradient adds each output row's gradient into its weight row, repeated indices in position
// order (deterministic on every device), none into row padding_idx; with scale_grad_by_freq each
// row's gradient is divided by how often its index occurs in input (as torch.nn.functional.embedding).
Tensor embedding(const Tensor& input, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt, bool scale_grad_by_freq = false);
// x's int64 values as one-hot rows: x's shape + [num_classes] int64 (num_classes -1: the largest
// value + 1, which waits for the device once). ValueError for a negative value or one >= classes.
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);

// x where mask is false, value where it is true (mask broadcast to x's shape).
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

}  // namespace ember

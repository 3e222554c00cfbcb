// Basic indexing, as x[1, 2:5, None, ...] in Python and NumPy: integers, slices, new axes and an
// ellipsis, applied left to right. The result is always a view of x, and differentiable.
//
//   index(x, {1, Slice{2, 5}, kNewAxis, kEllipsis})   // x[1, 2:5, None, ...]
//   index(x, {kEllipsis, Slice{{}, {}, 2}})            // x[..., ::2]
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
// kNewAxis or kEllipsis.
class TensorIndex {
 public:
  enum class Kind { kInteger, kSlice, kNewAxis, kEllipsis };
  TensorIndex(int64_t i) : kind_(Kind::kInteger), integer_(i) {}  // NOLINT: reads as x[1]
  TensorIndex(Slice s) : kind_(Kind::kSlice), slice_(s) {}        // NOLINT
  TensorIndex(NewAxis) : kind_(Kind::kNewAxis) {}                 // NOLINT
  TensorIndex(Ellipsis) : kind_(Kind::kEllipsis) {}               // NOLINT

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  const Slice& slice() const { return slice_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
};

// requires: at most one kEllipsis, and no more integers and slices than x has dims (IndexError);
//           integers in [-size, size) of their dim (IndexError); slice steps > 0 (ValueError).
// ensures:  a view of x (x itself for an empty list); its gradient goes to the indexed
//           elements of x, zeros elsewhere.
Tensor index(const Tensor& x, const std::vector<TensorIndex>& items);

}  // namespace ember

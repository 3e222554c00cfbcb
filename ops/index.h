// Indexing through integer tensors, as PyTorch does it: advanced indexing (reading and writing),
// gather/scatter along a dim, index_select/index_add, the coordinates of non-zero elements.
//
// requires: index tensors of dtype int64 on the indexed tensor's device (DTypeError/DeviceError
//           naming the op otherwise); values in [-size, size) of the dim they index (negative
//           ones count from the end), else IndexError naming the op, the index, the dim and its
//           size, on every device (Note [Index checks] in ops/index.cpp); shapes as PyTorch
//           requires them (ShapeError naming both shapes).
//           `check = false` skips reading the fault word back (no wait for the device) where the
//           caller checked the same indices before (autograd's backward passes); an index out of
//           range is then skipped silently.
// ensures:  reads give new contiguous tensors; the `_` ops write in place and bump the written
//           tensor's version. Writes through repeated indices combine in the order of the
//           positions, row-major (Note [Scatter order]): the last write wins (assign) or the
//           values add up in that order (accumulate), the same on cpu, cuda and emu. These ops
//           are autograd-free; autograd/ wraps them.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace ember::ops {

// x[indices]: indices[d] (int64, any shape) indexes dim d of x, an undefined entry keeps the
// whole dim (":"); at most x.dim() entries, the rest are ":". The index tensors broadcast to one
// shape B; the result is x's kept dims with B in place of the indexed ones when these are
// adjacent, else B followed by the kept dims (PyTorch's and NumPy's rule).
Tensor index(const Tensor& x, const std::vector<Tensor>& indices, bool check = true);
// x[indices] = values (values broadcast to x[indices]'s shape, converted to x's dtype), or
// x[indices] += values, each position added in turn, when accumulate.
void index_put_(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values,
                bool accumulate, bool check = true);

// x.index_select(dim, index): index 1-D (or 0-D) int64.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, bool check = true);
// x.gather(dim, index): out[i][j][k] = x[index[i][j][k]][j][k] for dim 0; index has x's number
// of dims and sizes at most x's outside `dim`.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, bool check = true);
// x.scatter_(dim, index, src) / scatter_add_: x[index[i][j][k]][j][k] = (+=) src[i][j][k]
// for dim 0; src at least index's size in every dim, x at least index's outside `dim`.
void scatter_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
              bool accumulate, bool check = true);
// x.index_add_(dim, index, src): x.select(dim, index[i]) += src.select(dim, i); src has x's
// shape except len(index) along dim.
void index_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                bool check = true);

// The coordinates of x's non-zero elements, [count, x.dim()] int64, row-major order. Waits for
// the device once: the count sizes the result (Note [Sizes from data]).
Tensor nonzero(const Tensor& x);
// x's elements where mask (broadcast with x) is true, as a 1-D tensor.
Tensor masked_select(const Tensor& x, const Tensor& mask);
// A bool mask as the int64 index tensors of its true elements, one per mask dim.
std::vector<Tensor> mask_indices(const Tensor& mask);

}  // namespace ember::ops

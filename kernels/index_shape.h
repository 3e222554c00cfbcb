// The plain parameters of the indexing kernels, shared by the CPU and GPU kernels and by ops/:
// reading through integer index tensors (advanced indexing, gather, index_select, take_along_dim,
// embedding), writing through them (index_put_, scatter_, scatter_add_, index_add_) and the
// coordinates of non-zero elements (nonzero, masked_select).
#pragma once

#include <cstdint>

#include "kernels/elementwise_shape.h"

namespace ember::kernels {

// The dims of the indexed tensor (the source of a gather, the destination of a scatter) that
// index tensors address: index k picks positions along a dim of `sizes[k]` elements, `strides[k]`
// elements apart. A negative index counts from the end, as in Python.
struct IndexedDims {
  int count = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

// The index tensors' int64 data, one pointer per indexed dim.
struct IndexPointers {
  const int64_t* p[kMaxDims] = {};
};

// The iteration space of an indexing kernel: operand 0 is the data tensor that is not indexed
// (the output of a gather, the source of a scatter), operand 1 the indexed tensor with stride 0
// along the dims the index tensors replace, operands 2.. the index tensors (broadcast with
// stride 0).
using IndexIteration = StridedIndex<2 + kMaxDims>;

// No out-of-range index seen: the value a fault word holds before the kernel.
constexpr uint64_t kNoIndexFault = ~uint64_t{0};

// How a scatter combines the values that land on one destination element.
enum class ScatterMode : uint8_t { assign, add };

// The kernels (kernels/kernel_table.h):
//   index_gather(elem_bytes, it, dims, idx, out, src, fault)
//       out[i] = src[offset_1(i) + sum_k wrap(idx_k[offset_{2+k}(i)]) * dims.strides[k]] for every
//       row-major position i of `it` (operand 0's strides are out's). Moves elements of
//       `elem_bytes` bytes (1, 2, 4 or 8): any dtype.
//   index_offsets(it, dims, idx, offsets, fault)
//       offsets[i] = the element offset in the indexed tensor that position i addresses (as
//       above, operand 1 being the indexed tensor); operand 0 is unused.
//   index_scatter(mode, t, n, src_it, keys, order, dst, src)
//       Given the n offsets sorted ascending (keys) with the positions they came from (order,
//       the sorted positions of a stable sort, so equal keys keep position order): for each run of
//       equal keys, dst[key] = the value at the run's last position (assign), or dst[key] + the
//       sum of the run's values accumulated in position order in the compute type (add; float
//       for float16/bfloat16, rounded once). Positions address src through src_it (operand 0).
//   nonzero_coords(ndim, sizes, n, prefix, out)
//       For each position i < n of a row-major space of shape `sizes` whose inclusive count
//       prefix[i] exceeds prefix[i - 1] (a flagged element): out[prefix[i] - 1, :] = the
//       coordinates of i (int64, ndim per row).
// requires: index data int64; `fault` points to one uint64 on the kernels' device holding
//           kNoIndexFault (or a smaller position found earlier); index_scatter: t any dtype for
//           assign, f32/f64/f16/bf16/i32/i64 (and u8/bool on the cpu) for add.
// ensures:  an index outside [-size, size) is not followed: the kernel lowers *fault to the
//           smallest such position i (nothing else is written for it; a gather leaves out[i]
//           unspecified), so the op can report the index, its position and the size (Note
//           [Index checks] in ops/index.cpp). Results are the same on every device: a scatter's
//           order of combination is the positions' order, whatever the threads do.

// The most dims a coordinate kernel handles (nonzero's input).
constexpr int kMaxNonzeroDims = 16;
struct NonzeroShape {
  int ndim = 0;
  int64_t sizes[kMaxNonzeroDims] = {};
};

}  // namespace ember::kernels

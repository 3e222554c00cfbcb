// What every op needs to call a kernel: the device's kernel table (kernels_for, from
// kernels/kernel_table.h), the stream to launch on, scratch memory, and the strided iteration
// spaces built from tensors. An op's kernel call is one line that serves cpu, cuda and emu:
//
//   kernels_for(dev).max_pool2d_fwd(x.dtype(), s, x.data_ptr(), y.data_ptr(), idx, stream_of(dev));
#pragma once

#include <array>

#include "kernels/kernel_table.h"
#include "runtime/allocator.h"
#include "runtime/gpu.h"
#include "runtime/tensor.h"

namespace ember::ops {

using kernels::kMaxDims;
using kernels::StridedIndex;

// The stream an op on `d` launches on: the thread's current stream of the device (Note [The
// current stream] in runtime/gpu.h); nullptr (ignored) on the cpu.
inline gpu::Stream stream_of(Device d) {
  return gpu::current_stream(d);
}

// `bytes` of scratch memory on `d` for one kernel call, aligned for any element type (null when
// `bytes` is 0): the allocator's block itself, not a tensor around it (every convolution call
// takes one).
DataPtr workspace(Device d, size_t bytes);

// The iteration space over `sizes` of N operands with the given element strides, with size-1
// dims dropped and dims that are contiguous in every operand merged. Returns false when more
// than kMaxDims dims remain.
template <int N>
bool make_strided_index(const Shape& sizes, const std::array<Shape, N>& strides,
                        StridedIndex<N>& out) {
  out = {};
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool merge = out.ndim > 0;
    for (int k = 0; k < N && merge; ++k)
      merge = out.strides[k][out.ndim - 1] == strides[k][d] * sizes[d];
    if (merge) {
      out.sizes[out.ndim - 1] *= sizes[d];
      for (int k = 0; k < N; ++k) out.strides[k][out.ndim - 1] = strides[k][d];
      continue;
    }
    if (out.ndim == kMaxDims) return false;
    out.sizes[out.ndim] = sizes[d];
    for (int k = 0; k < N; ++k) out.strides[k][out.ndim] = strides[k][d];
    ++out.ndim;
  }
  return true;
}

// Note [Widened half ops]
// Ops with no float16/bfloat16 kernels of their own (matmul and linear on the cpu, batch norm,
// the losses; conv2d's fallback widened_f32) run as their float32 op on widened copies of the half
// operands and round each result once to the half type: float32 arithmetic throughout, as a Tensor
// Core accumulates, at the cost of the copies. Results that are statistics for a backward (batch
// norm's mean and invstd, cross entropy's log-probabilities) stay float32.
inline bool is_half(DType t) {
  return t == kFloat16 || t == kBFloat16;
}
// `t` as float32 when it is a float16/bfloat16 tensor; otherwise `t` itself (undefined stays
// undefined).
inline Tensor widen_half(const Tensor& t) {
  return t.defined() && is_half(t.dtype()) ? t.to(kFloat32) : t;
}

// Whether EMBER_LOG (a comma-separated list) asks for "select": ops that choose between kernels
// or libraries print each new choice, and why, to stderr.
bool log_select();

// Element strides that view `t` as `shape` (its shape broadcast to it): 0 along broadcast dims.
Shape broadcast_strides(const Tensor& t, const Shape& shape);

}  // namespace ember::ops

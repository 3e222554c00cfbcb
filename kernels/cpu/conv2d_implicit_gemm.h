// 2-D convolution on the CPU as an implicit GEMM: float32 only, on x86-64 CPUs with AVX2+FMA or
// AVX-512, whatever the build's target: both sets of micro-kernels are in every x86-64 build and
// one is chosen at run time (kernels/cpu/cpu_isa.h, EMBER_CPU_ISA). The receptive fields are
// never written out as a column matrix: each 32-column panel of it is gathered straight from the
// NCHW image into the GEMM's packed operand, which stays in cache, and a register-tiled
// micro-kernel multiplies it.
//
//   forward          Y = W * col(X)
//   backward data    dX = W' * col'(dY): a forward convolution of dY with the filters flipped in
//                    space and transposed in channels (no col2im); with stride > 1, one per class
//                    of input rows and columns, scattered into dX
//   backward filter  dWᵀ += col(X) * dYᵀ, panel by panel
//
// Buffers and geometry as in kernels/conv_shape.h (contiguous NCHW / KCRS, outputs
// overwritten, no aliasing). `workspace` holds at least conv2d_implicit_gemm_workspace_bytes(s,
// pass) asked for in the same threading context for full parallelism; with less the kernel uses
// fewer threads, and throws ValueError only when even one does not fit.
//
// Parallelism: the panels split into one contiguous run per thread; the filter gradient sums
// per-thread partial results in a fixed order, so every result is the same on every run with the
// same thread count.
#pragma once

#include <cstddef>

#include "kernels/conv_shape.h"
#include "kernels/cpu/output_clamp.h"
#include "kernels/kernel_table.h"
#include "runtime/dtype.h"

namespace ember::kernels::cpu {

// The table's entries (kernels/kernel_table.h: conv2d_implicit_gemm_supports, _workspace_bytes,
// _plan, conv2d_{fwd,bwd_data,bwd_filter}_implicit_gemm) are this algorithm on the cpu; `supports`
// says false, with the reason, for anything but float32, and for a CPU (or cap) without AVX2+FMA
// ("needs AVX2+FMA or AVX-512; ..."); the others require it, and the run functions throw
// ValueError where the instruction set was lowered since. Each call uses the instruction set
// cpu_isa() answers at its start. The cost model's estimate is the cpu's own:

// Estimated time of `pass` on the threads it will use (a thread per image on the prepared-image
// path, per panel otherwise, as many as there are), in vector multiply-adds of the instruction
// set in use (16 lanes on AVX-512, 8 on AVX2; over whole 32-column panels and the micro-kernels'
// filter tiles, padding included) plus one unit per value gathered without a prepared image
// copy, per filter value packed, and per value of the per-thread filter-gradient partials
// added up: what the registry's cost model compares with the other algorithms. Zero when not
// supported.
double conv2d_implicit_gemm_work(const ConvShape& s, ConvDirection pass);

// The table's forward, with y clamped as each block of it is written (while in cache) when
// `clamp` is not null: ops::conv2d_bias_clamp on the cpu. With `residual` (y's shape,
// contiguous, not overlapping y), y = clamp(conv + bias + residual): ops::conv2d_bias_add_clamp;
// no clamp then is none. Requires and throws as the forward.
// `packed`, when not null, is w as conv2d_implicit_gemm_pack_filters packed it in the layout
// named `packed_isa` (conv2d_implicit_gemm_packed_layout): used instead of packing w again where
// that is this call's layout (else w is packed as usual).
void conv2d_fwd_implicit_gemm_clamped(const ConvShape& s, const void* x, const void* w,
                                      const void* bias, void* y, void* workspace,
                                      size_t workspace_bytes, const OutputClamp* clamp,
                                      const float* residual = nullptr,
                                      const float* packed = nullptr,
                                      const char* packed_isa = nullptr);

// The forward's filters packed once, for weights that do not change (the ONNX runtime's
// convolutions): what the forward otherwise packs into its workspace on every call. The size
// depends on s's filters only (k, c, r, s, groups), not on n, h or w; the layout on the
// micro-kernels in use, whose name conv2d_implicit_gemm_isa() gives, and on the stride, padding
// and dilation (which choose the filters-in-lanes layout, Note [Filters in lanes]), so s carries
// the convolution's. Throws as the forward.
int64_t conv2d_implicit_gemm_packed_filter_elems(const ConvShape& s);
void conv2d_implicit_gemm_pack_filters(const ConvShape& s, const void* w, float* packed);
// The name of the layout conv2d_implicit_gemm_pack_filters gives s's filters: the micro-kernels'
// ("avx512", "avx2"), or "avx512-lanes" for the filters in lanes. The forward reads `packed` only
// when packed_isa is this name for its own shape.
const char* conv2d_implicit_gemm_packed_layout(const ConvShape& s);

// The micro-kernels the next call would use: "avx512", "avx2", or null where there are none.
// Throws as cpu_isa() (a bad EMBER_CPU_ISA).
const char* conv2d_implicit_gemm_isa();

}  // namespace ember::kernels::cpu

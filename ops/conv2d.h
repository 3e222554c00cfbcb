// 2-D convolution (NCHW, float32/float64, and float16/bfloat16 with float32 sums (Note [Half
// convolutions] in ops/conv2d_half.cpp), on the cpu, cuda and emu devices): forward and both
// backward passes, autograd-free. Checks and shape inference live here; the work is dispatched
// through the algorithm registry (ops/conv2d_algo.h) to the kernels in kernels/cpu/conv2d_* or
// kernels/cuda/conv2d_*.
//
// Shapes: x [N, C, H, W], w [K, C/groups, R, S], bias [K], y [N, K, OH, OW] with
//   OH = (H + 2*pad_h - dil_h*(R-1) - 1) / stride_h + 1   (and OW alike), as in PyTorch.
// Errors (each names the op and the shapes): ShapeError for wrong ranks, channel counts
// (C != w.size(1) * groups, groups not dividing C or K), a bias that is not [K], a dilated
// kernel larger than the padded input, or a grad_y of the wrong shape; ValueError for
// stride/dilation/groups < 1 or padding < 0; DTypeError for x, w, bias of different dtypes or not
// floating; DeviceError (naming both devices) for operands on different devices.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "ops/conv2d_algo.h"
#include "runtime/tensor.h"

namespace ember::ops {

struct Conv2dParams {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

// Validates the geometry and returns y's shape [N, K, OH, OW].
Shape conv2d_output_shape(const Shape& x_shape, const Shape& w_shape, const Conv2dParams& p);

// The registry key of one direction of this convolution (under the current deterministic
// setting). requires: the geometry is valid (conv2d_output_shape does not throw).
ConvKey conv2d_key(ConvDirection direction, const Shape& x_shape, const Shape& w_shape, DType dtype,
                   Device device, const Conv2dParams& p);

// Filters packed once for the cpu's implicit GEMM forward, for weights that do not change
// (inference: the ONNX runtime packs each Conv's at load), so that a call does not pack them
// again (at batch 1 a tenth of a 3x3 layer's time). `data` is undefined where there is nothing
// to pack (w not float32 on the cpu, or a CPU without the micro-kernels); a forward under other
// micro-kernels (EMBER_CPU_ISA changed since), or whose stride asks for another layout than p's,
// packs w as usual.
struct PackedConv2dFilters {
  Tensor data;      // float32, on the cpu
  std::string isa;  // the micro-kernels and layout they are packed for ("avx2", "avx512",
                    // "avx512-lanes": conv2d_implicit_gemm_packed_layout)
  // A stride-1 layer's layout depends on its image size, unknown when packing (Note [Filters in
  // lanes] in kernels/cpu/conv2d_implicit_gemm_lanes.cpp): `data` is then for the image copies,
  // and where the filters in lanes may serve the layer they are packed for those too.
  Tensor lanes_data;
  std::string lanes_isa;
  Shape w_shape;  // of the filters packed, and their groups
  int64_t groups = 1;
};
// throws: ShapeError unless w is 4-D with a positive filter count divisible by p.groups;
// ValueError for bad parameters.
PackedConv2dFilters pack_conv2d_filters(const Tensor& w, const Conv2dParams& p);

// y = conv2d(x, w) + bias. `bias` may be undefined (no bias). Inputs of any strides.
// ensures: a new contiguous tensor of x's dtype.
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p);
// The inference forms below take `packed` (or null): the cpu's implicit GEMM then reads it
// instead of packing w (w must still be given: the other algorithms read it).
// requires: `packed` is pack_conv2d_filters of this w, its values unchanged since (a packing of
// other values of the same shape is not detected).
// throws: ValueError when `packed` was made for another filter shape or groups.

// relu(conv2d(x, w, bias)) for inference: on cuda one fused cuDNN graph (conv + bias + relu,
// the intermediates never in memory) where cuDNN serves, else as conv2d_bias_clamp(0, inf).
Tensor conv2d_bias_relu(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const Conv2dParams& p, const PackedConv2dFilters* packed = nullptr);
// clamp(conv2d(x, w, bias), lo, hi) for inference (ReLU6: [0, 6]), NaN kept. On the cpu the
// implicit GEMM and the direct kernels clamp each block of y as they write it, while it is in
// cache; other algorithms and devices clamp y in place after the convolution.
// throws: ValueError when a bound is NaN or lo > hi; as conv2d otherwise.
Tensor conv2d_bias_clamp(const Tensor& x, const Tensor& w, const Tensor& bias,
                         const Conv2dParams& p, double lo, double hi,
                         const PackedConv2dFilters* packed = nullptr);
// clamp(conv2d(x, w, bias) + residual, lo, hi) for inference: a residual block's sum and its
// activation ((-inf, inf) for none). On the cpu the implicit GEMM adds and clamps each block of
// y as it writes it, in the registers (or each image once computed, while it is in cache: Note
// [Skewed planes]); elsewhere after the convolution. The sum is rounded once, as conv2d then add
// round it.
// throws: ValueError for bad bounds or an undefined residual; ShapeError unless the residual
// has y's shape (no broadcasting); DTypeError, DeviceError unless it has x's dtype and device;
// as conv2d otherwise.
Tensor conv2d_bias_add_clamp(const Tensor& x, const Tensor& w, const Tensor& bias,
                             const Tensor& residual, const Conv2dParams& p, double lo, double hi,
                             const PackedConv2dFilters* packed = nullptr);

// conv2d_bias_add_clamp prepared once for inputs shaped like x (and a residual like `residual`,
// or none): the checks, the output shape, the registry's key and choice made now, for the calls
// of run_prepared_conv2d (Note [Prepared convolutions] in ops/conv2d.cpp). Null where the
// forward is not prepared: not on the cpu, half dtypes, an empty x or y.
// throws: as conv2d_bias_add_clamp (where no algorithm can run the key, the run throws).
struct PreparedConv2d;
std::shared_ptr<const PreparedConv2d> prepare_conv2d(const Tensor& x, const Tensor& w,
                                                     const Tensor& bias, const Tensor& residual,
                                                     const Conv2dParams& p, double lo, double hi,
                                                     const PackedConv2dFilters* packed = nullptr);
// conv2d_bias_add_clamp(x, w, bias, residual (or none), p, lo, hi, packed) as prepared; an
// undefined tensor, nothing run, where the call is not the one prepared (x's shape, dtype,
// device or layout, other filters or bias, another residual) or the registry would now choose
// otherwise (conv_choice_current).
Tensor run_prepared_conv2d(const PreparedConv2d& prepared, const Tensor& x, const Tensor& w,
                           const Tensor& bias, const Tensor& residual);

// dL/dx given dL/dy for y = conv2d(x, w): grad_y [N, K, OH, OW] -> [x_shape].
Tensor conv2d_backward_data(const Tensor& grad_y, const Tensor& w, const Shape& x_shape,
                            const Conv2dParams& p);

// dL/dw given dL/dy for y = conv2d(x, w): grad_y [N, K, OH, OW] -> [w_shape].
Tensor conv2d_backward_filter(const Tensor& grad_y, const Tensor& x, const Shape& w_shape,
                              const Conv2dParams& p);

}  // namespace ember::ops

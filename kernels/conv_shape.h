// The geometry of a 2-D convolution, as the kernels see it: plain integers, no Tensor, no Eigen,
// so CPU and CUDA kernels can share it.
//
// Layout is NCHW for x and y and KCRS for the filter, all contiguous. With groups G the C input
// channels and K filters split into G equal groups; filter k sees channels
// [g * C/G, (g + 1) * C/G) for g = k / (K/G), so the filter has C/G input channels.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::kernels {

// The three convolutions of a layer: y from x (forward), dx from dy (backward-data) and dw from dy
// and x (backward-filter).
enum class ConvDirection : uint8_t { forward, backward_data, backward_filter };

// "forward", "backward_data", "backward_filter".
inline const char* conv_direction_name(ConvDirection d) {
  return d == ConvDirection::forward         ? "forward"
         : d == ConvDirection::backward_data ? "backward_data"
                                             : "backward_filter";
}

// The kernels of kernels/kernel_table.h, every direction:
// requires: t float32 or float64 (the cpu's implicit GEMM: float32 on AVX-512 builds; ask
//           conv2d_implicit_gemm_supports); every buffer contiguous in the layouts above, outputs
//           not aliasing inputs; oh, ow filled in; any stride/padding/dilation/groups; workspace
//           of conv2d_implicit_gemm_workspace_bytes for the implicit GEMM.
// ensures:  forward y = conv(x, w) (+ bias[k] when bias is not null); backward data dx; backward
//           filter dw: the output written in full, each element summed in a fixed order
//           (deterministic).
struct ConvShape {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t k = 0, r = 0, s = 0;         // filters: count, height, width
  int64_t oh = 0, ow = 0;              // output height, width
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dil_h = 1, dil_w = 1;
  int64_t groups = 1;

  int64_t cg() const { return c / groups; }  // input channels per group
  int64_t kg() const { return k / groups; }  // filters per group
  int64_t x_numel() const { return n * c * h * w; }
  int64_t y_numel() const { return n * k * oh * ow; }
  int64_t w_numel() const { return k * cg() * r * s; }
  // Multiply-adds of one direction (all three directions do the same number).
  int64_t macs() const { return n * k * oh * ow * cg() * r * s; }
  // A 1x1 filter with stride 1 and no padding reads x exactly as the GEMM wants it.
  bool is_pointwise() const {
    return r == 1 && s == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0;
  }
};

// The Tensor Core implicit GEMM (kernels/cuda/conv2d_tc.cu), float16/bfloat16 with float32
// accumulation: conv2d_tc(t, s, d, a, b, bias, out, stream) computes direction d from
// a, b = (x, w) forward (out y, + bias[k] when bias is not null, all in t), (dy, w) backward-data
// (out dx in t), (dy, x) backward-filter (out dw in float32); layouts as above, any geometry and
// groups. conv2d_tc_supports(t, s, d) is "" where it runs, else why not (not float16/bfloat16;
// bfloat16 before sm_80; the cpu has no Tensor Cores); conv2d_tc throws std::invalid_argument
// (GPU) or DTypeError (cpu) with that reason.

// How the implicit GEMM computes one direction on a device: what the table's
// conv2d_implicit_gemm_plan answers, from the rules its kernels run by (kernels/cuda/
// conv2d_implicit_gemm.cu, Note [Choosing the tile], says why they are what they are).
enum class ConvGemmKernel : uint8_t {
  none,   // nothing to compute (no rows or no columns)
  cpu,    // the cpu's micro-kernels (kernels/cpu/conv2d_implicit_gemm.h): no block tile to report
  tiled,  // the GPU's block-tiled GEMM with the gather of the direction
};

// conv2d_implicit_gemm_plan(t, shape, direction), for a t that conv2d_implicit_gemm_supports:
// ensures: kernel says which; workspace_bytes is conv2d_implicit_gemm_workspace_bytes. For tiled:
//          per group a rows x cols GEMM with a reduction of depth (forward: N*OH*OW x K/G over
//          C/G*R*S; backward-data: N*H*W x C/G over K/G*R*S; backward-filter: C/G*R*S x K/G
//          over N*OH*OW), in bm x bn block tiles of `threads` threads with tm x tn each, over
//          grid[0] row tiles x grid[1] column tiles x grid[2] items along z (the groups, times
//          the splits; capped at the device's grid limit, looping). Backward-filter cuts its
//          reduction into `splits` chunks of `chunk` (split-K; 1: none) whose partial sums in
//          the workspace a second kernel adds in split order.
// throws: std::invalid_argument (GPU) for a dtype other than f32, f64.
struct ConvGemmPlan {
  ConvGemmKernel kernel = ConvGemmKernel::none;
  int64_t rows = 0, cols = 0, depth = 0;
  int bm = 0, bn = 0, tm = 0, tn = 0, threads = 0;
  unsigned grid[3] = {0, 0, 0};
  int splits = 1;
  int64_t chunk = 0;
  size_t workspace_bytes = 0;
};

}  // namespace ember::kernels

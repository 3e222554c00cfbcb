// The GPU backends' kernel entry points, one table per backend (`cuda`: the kernels/cuda sources
// compiled by nvcc; `emu`: the same sources compiled by g++ for the SIMT emulator), so each op's
// GPU dispatch is written once and serves both devices. Also the helpers that turn tensors into
// the kernels' plain parameters.
#pragma once

#include <array>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/batch_norm.cuh"
#include "kernels/cuda/conv2d_direct.cuh"
#include "kernels/cuda/conv2d_implicit_gemm.cuh"
#include "kernels/cuda/copy.cuh"
#include "kernels/cuda/dropout.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/loss.cuh"
#include "kernels/cuda/optim.cuh"
#include "kernels/cuda/pool2d.cuh"
#include "kernels/cuda/random.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/softmax.cuh"
#include "runtime/tensor.h"

namespace ember::ops {

namespace gpu_types = kernels::gpu_types;

// Every launcher takes the stream last; ops pass the default stream (nullptr) for now.
struct GpuKernels {
  decltype(&kernels::emu::binary_contiguous) binary_contiguous;
  decltype(&kernels::emu::binary_strided) binary_strided;
  decltype(&kernels::emu::unary_contiguous) unary_contiguous;
  decltype(&kernels::emu::unary_strided) unary_strided;
  decltype(&kernels::emu::where_strided) where_strided;
  decltype(&kernels::emu::copy_strided) copy_strided;
  decltype(&kernels::emu::reduce_rows) reduce_rows;
  decltype(&kernels::emu::gemm_batched) gemm_batched;
  decltype(&kernels::emu::random_fill) random_fill;
  decltype(&kernels::emu::sgd_step) sgd_step;
  decltype(&kernels::emu::adam_step) adam_step;
  // convolution
  decltype(&kernels::emu::conv2d_fwd_direct) conv2d_fwd_direct;
  decltype(&kernels::emu::conv2d_bwd_data_direct) conv2d_bwd_data_direct;
  decltype(&kernels::emu::conv2d_bwd_filter_direct) conv2d_bwd_filter_direct;
  decltype(&kernels::emu::conv2d_fwd_implicit_gemm) conv2d_fwd_implicit_gemm;
  decltype(&kernels::emu::conv2d_bwd_data_implicit_gemm) conv2d_bwd_data_implicit_gemm;
  decltype(&kernels::emu::conv2d_bwd_filter_implicit_gemm) conv2d_bwd_filter_implicit_gemm;
  decltype(&kernels::emu::conv2d_implicit_gemm_workspace) conv2d_implicit_gemm_workspace;
  // pooling, batch norm
  decltype(&kernels::emu::max_pool2d_fwd) max_pool2d_fwd;
  decltype(&kernels::emu::max_pool2d_bwd) max_pool2d_bwd;
  decltype(&kernels::emu::avg_pool2d_fwd) avg_pool2d_fwd;
  decltype(&kernels::emu::avg_pool2d_bwd) avg_pool2d_bwd;
  decltype(&kernels::emu::adaptive_avg_pool2d_fwd) adaptive_avg_pool2d_fwd;
  decltype(&kernels::emu::adaptive_avg_pool2d_bwd) adaptive_avg_pool2d_bwd;
  decltype(&kernels::emu::batch_norm_fwd) batch_norm_fwd;
  decltype(&kernels::emu::batch_norm_bwd) batch_norm_bwd;
  // activations, softmax, losses, dropout
  decltype(&kernels::emu::activation_fwd) activation_fwd;
  decltype(&kernels::emu::activation_bwd) activation_bwd;
  decltype(&kernels::emu::softmax_fwd) softmax_fwd;
  decltype(&kernels::emu::softmax_bwd) softmax_bwd;
  decltype(&kernels::emu::cross_entropy_fwd) cross_entropy_fwd;
  decltype(&kernels::emu::nll_fwd) nll_fwd;
  decltype(&kernels::emu::nll_bwd) nll_bwd;
  decltype(&kernels::emu::mse_fwd) mse_fwd;
  decltype(&kernels::emu::mse_bwd) mse_bwd;
  decltype(&kernels::emu::dropout_fwd) dropout_fwd;
  decltype(&kernels::emu::dropout_bwd) dropout_bwd;
};

// The table of `type` (CUDA or EMU). Throws DeviceError for CUDA in a build without it (saying
// so) and for the cpu.
const GpuKernels& gpu_kernels(DeviceType type);
// The table of `d`'s type, with `d` made the calling thread's current device, since kernels
// launch on the current device (a tensor on cuda:1 runs its kernels there). The device stays
// current afterwards. Ops launch through this form.
const GpuKernels& gpu_kernels(Device d);

// Whether the GPU kernels handle element type `t` at all (f16/bf16 do not yet), and its code.
bool gpu_has_scalar(DType t);
// requires: gpu_has_scalar(t) (DTypeError naming `op` otherwise).
gpu_types::Scalar gpu_scalar(DType t, const char* op);

// The iteration space over `sizes` of N operands with the given element strides, with size-1
// dims dropped and dims that are contiguous in every operand merged. Returns false when more
// than gpu_types::kMaxDims dims remain.
template <int N>
bool make_strided_index(const Shape& sizes, const std::array<Shape, N>& strides,
                        gpu_types::StridedIndex<N>& out) {
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
    if (out.ndim == gpu_types::kMaxDims) return false;
    out.sizes[out.ndim] = sizes[d];
    for (int k = 0; k < N; ++k) out.strides[k][out.ndim] = strides[k][d];
    ++out.ndim;
  }
  return true;
}

// Element strides that view `t` as `shape` (its shape broadcast to it): 0 along broadcast dims.
Shape broadcast_strides(const Tensor& t, const Shape& shape);

}  // namespace ember::ops

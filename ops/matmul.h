// Matrix products.
//
// matmul follows torch.matmul: 1-D x 1-D is a dot product; 2-D x 2-D a matrix product; 1-D
// operands are promoted to a row/column and the added dim removed afterwards; for >2-D the
// leading (batch) dims broadcast. requires: float32 or float64, same dtype and device, inner
// sizes equal (ShapeError naming both shapes otherwise).
//
// float16 and bfloat16 products (Note [Half products] in ops/matmul.cpp) accumulate in float32
// and round once: on cuda through cuBLAS's cublasGemmStridedBatchedEx (CUBLAS_COMPUTE_32F) or
// Ember's Tensor Core kernels (kernels/cuda/gemm_tc.cu), on emu through those kernels, on the
// cpu as the float32 product of widened copies.
#pragma once

#include <cstdint>

#include "kernels/gemm_shape.h"
#include "runtime/tensor.h"

namespace ember::ops {

// Which GEMM runs matmul/mm/bmm on `cuda` (`emu` always runs Ember's tiled GEMM):
//   automatic  (default) cuBLAS in builds with it, else Ember's GEMM;
//   ember      Ember's tiled GEMM (kernels/cuda/gemm.cu);
//   cublas     cuBLAS (cublas<t>gemmStridedBatched, fp32/fp64 math, no TF32).
// cuBLAS takes operands with a unit stride in one matrix dim and batch dims that merge into one
// stride; other layouts (sliced rows, unmergeable broadcasts) run on Ember's GEMM rather than
// being copied. EMBER_GEMM=ember|cublas|auto in the environment sets the choice until
// set_gpu_gemm is called.
enum class GpuGemm : uint8_t { automatic, ember, cublas };
// requires: g != cublas unless gpu_gemm_has_cublas() (DeviceError naming the build otherwise).
void set_gpu_gemm(GpuGemm g);
// The current choice (from set_gpu_gemm, else EMBER_GEMM; ValueError for an unknown value).
GpuGemm gpu_gemm();
// Whether this build has the cuBLAS backend.
bool gpu_gemm_has_cublas();
const char* gpu_gemm_name(GpuGemm g);

// Which Tensor Core kernel runs half products on cuda (when cuBLAS does not) and emu:
// automatic (mma_sync), wmma, mma_sync or wgmma (kernels/gemm_shape.h).
// EMBER_GEMM_TC=auto|wmma|mma_sync|wgmma in the environment sets the choice until set_tc_gemm is
// called. A kernel asked for by name that cannot run a product (bfloat16 before sm_80; wgmma
// anywhere but an sm_90 GPU) is an error; the automatic choice falls back to the float32 product
// of widened copies, and says so under EMBER_LOG=select.
// requires: k is automatic, wmma, mma_sync or wgmma (ValueError otherwise).
void set_tc_gemm(kernels::TcKernel k);
// The current choice (from set_tc_gemm, else EMBER_GEMM_TC; ValueError for an unknown value).
kernels::TcKernel tc_gemm();

Tensor matmul(const Tensor& a, const Tensor& b);
// 2-D only: [M, K] x [K, N] -> [M, N].
Tensor mm(const Tensor& a, const Tensor& b);
// 3-D only: [B, M, K] x [B, K, N] -> [B, M, N].
Tensor bmm(const Tensor& a, const Tensor& b);

}  // namespace ember::ops

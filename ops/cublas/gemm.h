// cuBLAS as a backend of matmul/mm/bmm on `cuda`: the strided-batched SGEMM/DGEMM call for
// row-major operands, in fp32/fp64 math (no TF32), and cublasGemmStridedBatchedEx for float16 and
// bfloat16 operands with float32 accumulation (CUBLAS_COMPUTE_32F, on Tensor Cores). Compiled only
// in builds with cuBLAS (EMBER_HAVE_CUBLAS in ember/build_config.h); ops/matmul.cpp decides when to
// call it.
#pragma once

#include "kernels/gemm_shape.h"
#include "runtime/dtype.h"
#include "runtime/gpu.h"

namespace ember::ops::cublas {

// Whether one cublas<t>gemmStridedBatched call computes C = A x B for `shape`: each of A and B
// has a unit stride along one of its two matrix dims (any transpose is fine, a sliced row or
// column is not), the batch dims merge into at most one stride per operand (broadcast: stride
// 0), and every size and leading dimension fits cuBLAS's 32-bit ints.
bool gemm_supported(const kernels::GemmShape& shape);

// requires: gemm_supported(shape); t is f32 or f64; A, B, C on cuda device `device`; C
//           contiguous [batch, m, n], not aliasing A or B.
// ensures:  C = A x B, with K = 0 giving zeros; enqueued on `stream`; throws CublasError naming
//           the call and its status on failure.
void gemm_batched(DType t, const kernels::GemmShape& shape,
                  const void* a, const void* b, void* c, int device, gpu::Stream stream);

// The Tensor Core GEMM of kernels/gemm_shape.h (C = alpha A x B + beta C, C of g.out) on cuBLAS.
// requires: gemm_supported(g.shape); g.in f16 or bf16, g.out f32, f16 or bf16; as gemm_batched.
void gemm_tc(const kernels::TcGemm& g, const void* a, const void* b, void* c, int device,
             gpu::Stream stream);

}  // namespace ember::ops::cublas

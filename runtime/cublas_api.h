// cuBLAS's entry points, loaded on first use (Note [cuBLAS loaded on first use]). Built only
// where cuBLAS is (EMBER_HAVE_CUBLAS).
//
// Note [cuBLAS loaded on first use]
// A process that links cuBLAS maps and relocates cuBLAS and cuBLASLt when it starts: about
// 150 MB of resident memory before it does anything (a program linked with -lcublas and nothing
// else starts at a VmRSS of 156 MB, without it at 1.2 MB), which CPU-only training and embedders
// that never touch a GPU would pay too. So libember does not link cuBLAS: the few entry points
// it calls are looked up with dlopen and dlsym the first time a cuda matmul goes to cuBLAS, or
// a report asks for cuBLAS's version. A test checks that the library does not depend on it.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace ember {

struct CublasApi {
  decltype(&cublasCreate) create;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
  // The C entry point (the C++ header adds an overload taking a cudaDataType compute type).
  cublasStatus_t (*gemm_strided_batched_ex)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k, const void* alpha,
      const void* a, cudaDataType a_type, int lda, long long stride_a, const void* b,
      cudaDataType b_type, int ldb, long long stride_b, const void* beta, void* c,
      cudaDataType c_type, int ldc, long long stride_c, int batch, cublasComputeType_t compute,
      cublasGemmAlgo_t algo);
  decltype(&cublasGetProperty) get_property;
  std::string path;  // the file loaded
};

// The entry points, loaded on the first call (from any thread) and kept for the process's life.
// Tries libcublas.so.<the major version of the headers built with> (the loader's search, which
// includes libember's run path), then the file found when Ember was configured.
// throws: CublasError naming the files tried and the loader's messages when cuBLAS cannot be
// loaded or lacks an entry point; again on every later call.
const CublasApi& cublas_api();

}  // namespace ember

// Row-major GEMM through column-major cuBLAS.
//
// Note [Row-major GEMM on cuBLAS]: a row-major C[m,n] is the column-major C^T[n,m], and
// C^T = B^T A^T, so cuBLAS computes it with the operands swapped. A row-major matrix M[r,c] with
// strides (rs, cs) is, read column-major, M^T with leading dimension rs when cs == 1 (op N), or M
// itself with leading dimension cs when rs == 1, so M^T is op T of it.
#include "ops/cublas/gemm.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <vector>

#include "runtime/cublas_api.h"
#include "runtime/cuda_check.h"
#include "runtime/error.h"

namespace ember::ops::cublas {

using kernels::GemmShape;

namespace {

const char* status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}

[[noreturn]] void throw_cublas(cublasStatus_t s, const char* stmt, const char* file, int line,
                               int device) {
  EMBER_THROW(CublasError, stmt, " failed with ", status_name(s), " (", static_cast<int>(s),
              ") on cuda:", device, " at ", file, ":", line);
}

#define EMBER_CUBLAS_CHECK(stmt, device)                          \
  do {                                                            \
    cublasStatus_t ember_st_ = (stmt);                            \
    if (ember_st_ != CUBLAS_STATUS_SUCCESS)                       \
      throw_cublas(ember_st_, #stmt, __FILE__, __LINE__, device); \
  } while (0)

// One handle per device, created on first use and kept for the life of the process: destroying
// it during static destruction can run after the CUDA runtime has shut down. The handle's stream
// and math mode are set on every call under the lock, so threads never see each other's.
struct Handles {
  std::mutex mu;
  std::vector<cublasHandle_t> per_device;
};
Handles& handles() {
  static Handles* h = new Handles;  // never destroyed, for the reason above
  return *h;
}

// M[r, c] with strides (rs, cs) as a column-major operand for M^T (see the Note).
bool as_column_major(int64_t r, int64_t c, int64_t rs, int64_t cs, cublasOperation_t& op,
                     int64_t& ld) {
  const int64_t rmin = std::max<int64_t>(r, 1), cmin = std::max<int64_t>(c, 1);
  // A stride along a size-1 dim is never used: such a dim takes whichever role fits.
  if (cs == 1 || c == 1) {
    ld = r == 1 ? cmin : rs;
    if (ld >= cmin) {
      op = CUBLAS_OP_N;
      return true;
    }
  }
  if (rs == 1 || r == 1) {
    ld = c == 1 ? rmin : cs;
    if (ld >= rmin) {
      op = CUBLAS_OP_T;
      return true;
    }
  }
  return false;
}

bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

struct Plan {
  cublasOperation_t op_a, op_b;
  int64_t lda, ldb, stride_a = 0, stride_b = 0;
};

bool make_plan(const GemmShape& s, Plan& p) {
  if (!as_column_major(s.m, s.k, s.a_row, s.a_col, p.op_a, p.lda)) return false;
  if (!as_column_major(s.k, s.n, s.b_row, s.b_col, p.op_b, p.ldb)) return false;
  if (s.batch_index.ndim > 1) return false;
  if (s.batch_index.ndim == 1) {
    p.stride_a = s.batch_index.strides[0][0];
    p.stride_b = s.batch_index.strides[1][0];
    if (p.stride_a < 0 || p.stride_b < 0) return false;
  }
  return fits_int(s.m) && fits_int(s.n) && fits_int(s.k) && fits_int(s.batch) && fits_int(p.lda) &&
         fits_int(p.ldb) && fits_int(s.m * s.n);
}

}  // namespace

bool gemm_supported(const GemmShape& shape) {
  Plan p;
  return make_plan(shape, p);
}

namespace {

// One cuBLAS call's arguments for C^T[n, m] = B^T[n, k] x A^T[k, m] (Note [Row-major GEMM on
// cuBLAS]): the operands swapped, so cuBLAS's A is our B.
struct Call {
  cublasOperation_t op_a, op_b;
  int m, n, k, lda, ldb, ldc, batch;
  long long stride_a, stride_b, stride_c;
};

// Runs f(handle, call) on `device`'s handle, bound to `stream`, in the default math mode (which
// never converts fp32 inputs to TF32), under the handles' lock; nothing for an empty product.
template <typename F>
void with_handle(const GemmShape& s, int device, gpu::Stream stream, F&& f) {
  Plan p;
  EMBER_CHECK_VALUE(make_plan(s, p),
                    "cublas gemm: operand layout not supported (check "
                    "gemm_supported first)");
  if (s.m == 0 || s.n == 0 || s.batch == 0) return;
  const Call call{p.op_b,
                  p.op_a,
                  static_cast<int>(s.n),
                  static_cast<int>(s.m),
                  static_cast<int>(s.k),
                  static_cast<int>(p.ldb),
                  static_cast<int>(p.lda),
                  static_cast<int>(s.n),
                  static_cast<int>(s.batch),
                  p.stride_b,
                  p.stride_a,
                  static_cast<long long>(s.m) * s.n};
  ::ember::detail::DeviceScope scope(device);
  Handles& hs = handles();
  std::lock_guard<std::mutex> lock(hs.mu);
  if (hs.per_device.size() <= static_cast<size_t>(device))
    hs.per_device.resize(static_cast<size_t>(device) + 1, nullptr);
  cublasHandle_t& h = hs.per_device[static_cast<size_t>(device)];
  const CublasApi& api = cublas_api();  // Note [cuBLAS loaded on first use]
  if (!h) EMBER_CUBLAS_CHECK(api.create(&h), device);
  EMBER_CUBLAS_CHECK(api.set_stream(h, static_cast<cudaStream_t>(stream)), device);
  EMBER_CUBLAS_CHECK(api.set_math_mode(h, CUBLAS_DEFAULT_MATH), device);
  f(h, call);
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

}  // namespace

void gemm_batched(DType t, const GemmShape& s, const void* a, const void* b, void* c, int device,
                  gpu::Stream stream) {
  EMBER_CHECK_DTYPE(t == DType::f32 || t == DType::f64, "cublas gemm: expected float32 or float64");
  with_handle(s, device, stream, [&](cublasHandle_t h, const Call& q) {  // K = 0 gives zeros
    if (t == DType::f32) {
      const float one = 1, zero = 0;
      EMBER_CUBLAS_CHECK(cublas_api().sgemm_strided_batched(
                             h, q.op_a, q.op_b, q.m, q.n, q.k, &one, static_cast<const float*>(b),
                             q.lda, q.stride_a, static_cast<const float*>(a), q.ldb, q.stride_b,
                             &zero, static_cast<float*>(c), q.ldc, q.stride_c, q.batch),
                         device);
    } else {
      const double one = 1, zero = 0;
      EMBER_CUBLAS_CHECK(cublas_api().dgemm_strided_batched(
                             h, q.op_a, q.op_b, q.m, q.n, q.k, &one, static_cast<const double*>(b),
                             q.lda, q.stride_a, static_cast<const double*>(a), q.ldb, q.stride_b,
                             &zero, static_cast<double*>(c), q.ldc, q.stride_c, q.batch),
                         device);
    }
  });
}

void gemm_tc(const kernels::TcGemm& g, const void* a, const void* b, void* c, int device,
             gpu::Stream stream) {
  EMBER_CHECK_DTYPE(g.in == DType::f16 || g.in == DType::bf16,
                    "cublas gemm_tc: expected float16 or bfloat16 operands, got ", g.in);
  EMBER_CHECK_DTYPE(g.out == DType::f32 || g.out == DType::f16 || g.out == DType::bf16,
                    "cublas gemm_tc: expected a float32, float16 or bfloat16 result, got ", g.out);
  with_handle(g.shape, device, stream, [&](cublasHandle_t h, const Call& q) {
    EMBER_CUBLAS_CHECK(
        cublas_api().gemm_strided_batched_ex(h, q.op_a, q.op_b, q.m, q.n, q.k, &g.alpha, b, cuda_type(g.in),
                                   q.lda, q.stride_a, a, cuda_type(g.in), q.ldb, q.stride_b,
                                   &g.beta, c, cuda_type(g.out), q.ldc, q.stride_c, q.batch,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        device);
  });
}

}  // namespace ember::ops::cublas

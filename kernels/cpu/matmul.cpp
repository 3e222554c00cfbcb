// Matrix products via Eigen: each operand is mapped in place (row- or column-major with an outer
// stride), so Eigen's GEMM reads the tensor's memory directly; Eigen parallelises one large
// product with OpenMP, and a batch of small products runs one product per thread instead.
#include "kernels/kernel_table.h"

#include <Eigen/Core>
#include <vector>

#include "kernels/cpu/eigen_product.h"

#include "kernels/cpu/loops.h"
#include "runtime/half.h"

namespace ember::kernels::cpu {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
template <typename M>
using ConstMap = Eigen::Map<const M, Eigen::Unaligned, Eigen::OuterStride<>>;

// How one operand is laid out: row-major (unit column stride), column-major (unit row stride)
// or neither (packed into a contiguous temporary first).
enum class Layout { row, col, other };

Layout layout_of(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1 && (rows <= 1 || rs >= std::max<int64_t>(cols, 1))) return Layout::row;
  if (rs == 1 && (cols <= 1 || cs >= std::max<int64_t>(rows, 1))) return Layout::col;
  return Layout::other;
}

// Calls f(map) with an Eigen map of the rows x cols matrix at p.
template <typename T, typename F>
void with_map(const T* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs, F&& f) {
  switch (layout_of(rows, cols, rs, cs)) {
    case Layout::row:
      return f(
          ConstMap<RowMat<T>>(p, rows, cols, Eigen::OuterStride<>(std::max<int64_t>(rs, cols))));
    case Layout::col:
      return f(
          ConstMap<ColMat<T>>(p, rows, cols, Eigen::OuterStride<>(std::max<int64_t>(cs, rows))));
    case Layout::other: {
      RowMat<T> packed(rows, cols);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) packed(i, j) = p[i * rs + j * cs];
      return f(ConstMap<RowMat<T>>(packed.data(), rows, cols, Eigen::OuterStride<>(cols)));
    }
  }
}

template <typename T>
void gemm_one(const GemmShape& s, const T* a, const T* b, T* c) {
  Eigen::Map<RowMat<T>> cm(c, s.m, s.n);
  if (s.k == 0) {
    cm.setZero();
    return;
  }
  with_map(a, s.m, s.k, s.a_row, s.a_col, [&](const auto& am) {
    with_map(b, s.k, s.n, s.b_row, s.b_col, [&](const auto& bm) { product_rows(cm, am, bm); });
  });
}

// Element offsets of A's and B's item i of the batch.
void batch_offsets(const StridedIndex<2>& bi, int64_t i, int64_t& ao, int64_t& bo) {
  ao = bo = 0;
  for (int d = bi.ndim - 1; d >= 0; --d) {
    const int64_t idx = i % bi.sizes[d];
    i /= bi.sizes[d];
    ao += idx * bi.strides[0][d];
    bo += idx * bi.strides[1][d];
  }
}

template <typename T>
void matmul_typed(const GemmShape& s, const T* a, const T* b, T* c) {
  const int64_t batch = s.batch;
  const int64_t mn = s.m * s.n;
  // One product per thread when the batch can fill the threads and each product is small;
  // otherwise products in turn, each split over threads (Note [Eigen's threads]).
  const bool per_thread =
      batch >= omp_get_max_threads() && batch > 1 && s.m * s.n * s.k <= (int64_t{1} << 21);
  auto product = [&](int64_t i) {
    int64_t ao, bo;
    batch_offsets(s.batch_index, i, ao, bo);
    gemm_one(s, a + ao, b + bo, c + i * mn);
  };
  // No OpenMP region around the serial case: Eigen would see an (inactive) enclosing region
  // and start a nested team for every large product.
  if (per_thread) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < batch; ++i) product(i);
  } else {
    for (int64_t i = 0; i < batch; ++i) product(i);
  }
}

float half_to_float(DType t, uint16_t bits) {
  return t == DType::f16 ? half_bits_to_float(bits) : bf16_bits_to_float(bits);
}

// The `rows` x `cols` half matrix at p (strides rs, cs) widened into a contiguous float32 one.
void widen(DType t, const uint16_t* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
           float* out) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[i * cols + j] = half_to_float(t, p[i * rs + j * cs]);
}

// C's element i from the float32 value v (alpha and beta applied), rounded to C's dtype.
void store_out(DType t, void* c, int64_t i, float v) {
  if (t == DType::f32)
    static_cast<float*>(c)[i] = v;
  else
    static_cast<uint16_t*>(c)[i] = t == DType::f16 ? float_to_half_bits(v) : float_to_bf16_bits(v);
}

float load_out(DType t, const void* c, int64_t i) {
  if (t == DType::f32) return static_cast<const float*>(c)[i];
  return half_to_float(t, static_cast<const uint16_t*>(c)[i]);
}

// Why the cpu cannot run g ("" when it can).
const char* tc_unsupported(const TcGemm& g) {
  if (g.in != DType::f16 && g.in != DType::bf16)
    return "gemm_tc: expected float16 or bfloat16 operands";
  if (g.out != DType::f32 && g.out != DType::f16 && g.out != DType::bf16)
    return "gemm_tc: expected a float32, float16 or bfloat16 result";
  if (g.kernel != TcKernel::automatic && g.kernel != TcKernel::cpu)
    return "gemm_tc: the cpu has no Tensor Cores; its kernel is `cpu` (the float32 product of "
           "widened copies)";
  return "";
}

}  // namespace

TcGemmPlan gemm_tc_plan(const TcGemm& g, const void*, const void*, const void*) {
  TcGemmPlan p;
  p.why = tc_unsupported(g);
  p.supported = !*p.why;
  if (p.supported) p.kernel = TcKernel::cpu;
  return p;
}

// The float32 product of widened copies, item by item, then alpha, beta and one rounding.
void gemm_tc_batched(const TcGemm& g, const void* a, const void* b, void* c, Stream) {
  const char* why = tc_unsupported(g);
  if (*why) EMBER_THROW(DTypeError, why);
  const GemmShape& s = g.shape;
  if (s.m == 0 || s.n == 0 || s.batch == 0) return;
  GemmShape f = s;  // the widened operands: contiguous, one item
  f.a_row = s.k, f.a_col = 1, f.b_row = s.n, f.b_col = 1, f.batch = 1, f.batch_index = {};
  std::vector<float> aw(static_cast<size_t>(s.m * s.k)), bw(static_cast<size_t>(s.k * s.n)),
      cw(static_cast<size_t>(s.m * s.n));
  const auto* a16 = static_cast<const uint16_t*>(a);
  const auto* b16 = static_cast<const uint16_t*>(b);
  const int64_t mn = s.m * s.n;
  for (int64_t i = 0; i < s.batch; ++i) {
    int64_t ao, bo;
    batch_offsets(s.batch_index, i, ao, bo);
    widen(g.in, a16 + ao, s.m, s.k, s.a_row, s.a_col, aw.data());
    widen(g.in, b16 + bo, s.k, s.n, s.b_row, s.b_col, bw.data());
    gemm_one(f, aw.data(), bw.data(), cw.data());
    for (int64_t e = 0; e < mn; ++e) {
      float v = g.alpha * cw[static_cast<size_t>(e)];
      if (g.beta != 0.0f) v += g.beta * load_out(g.out, c, i * mn + e);
      store_out(g.out, c, i * mn + e, v);
    }
  }
}

bool eigen_serial_once() {
  Eigen::setNbThreads(1);
  return true;
}

void gemm_batched(DType t, const GemmShape& shape, const void* a, const void* b, void* c, Stream) {
  switch (t) {
    case DType::f32:
      return matmul_typed(shape, static_cast<const float*>(a), static_cast<const float*>(b),
                          static_cast<float*>(c));
    case DType::f64:
      return matmul_typed(shape, static_cast<const double*>(a), static_cast<const double*>(b),
                          static_cast<double*>(c));
    default:
      break;
  }
  EMBER_THROW(DTypeError, "matmul: the cpu kernel has no ", dtype_name(t),
              " version; expected float32 or float64");
}

// Eigen picks its own blocking: the plan says only that the cpu's product runs.
GemmPlan gemm_plan(DType t, const GemmShape& s, const void*, const void*, const void*) {
  if (t != DType::f32 && t != DType::f64)
    EMBER_THROW(DTypeError, "matmul: the cpu kernel has no ", dtype_name(t),
                " version; expected float32 or float64");
  GemmPlan p;
  if (s.m > 0 && s.n > 0 && s.batch > 0) p.kernel = GemmKernel::cpu;
  return p;
}

}  // namespace ember::kernels::cpu

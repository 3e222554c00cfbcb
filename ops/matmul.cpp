// Matrix products: torch.matmul's shape rules (1-D promotion, batch broadcasting), checks, output
// allocation, then the device's batched GEMM (kernels/gemm_shape.h; Eigen on the cpu) or cuBLAS on
// cuda (see set_gpu_gemm).
#include "ops/matmul.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "ember/build_config.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "ops/elementwise.h"
#include "runtime/trace.h"
#if EMBER_HAVE_CUBLAS
#include "ops/cublas/gemm.h"
#endif

namespace ember::ops {

using kernels::GemmShape;
using kernels::TcKernel;

namespace {

// -1: not set through the API, EMBER_GEMM (EMBER_GEMM_TC) decides.
std::atomic<int> g_gemm_api{-1}, g_tc_api{-1};

GpuGemm gemm_from_env() {
  const char* v = std::getenv("EMBER_GEMM");
  if (!v || !*v || std::strcmp(v, "auto") == 0) return GpuGemm::automatic;
  if (std::strcmp(v, "ember") == 0) return GpuGemm::ember;
  if (std::strcmp(v, "cublas") == 0) return GpuGemm::cublas;
  EMBER_THROW(ValueError, "EMBER_GEMM: expected ember, cublas or auto, got '", v, "'");
}

TcKernel tc_from_env() {
  const char* v = std::getenv("EMBER_GEMM_TC");
  if (!v || !*v || std::strcmp(v, "auto") == 0) return TcKernel::automatic;
  if (std::strcmp(v, "wmma") == 0) return TcKernel::wmma;
  if (std::strcmp(v, "mma_sync") == 0) return TcKernel::mma_sync;
  if (std::strcmp(v, "wgmma") == 0) return TcKernel::wgmma;
  EMBER_THROW(ValueError, "EMBER_GEMM_TC: expected wmma, mma_sync, wgmma or auto, got '", v, "'");
}

// Whether cuBLAS runs a product of `g`'s shape on `d` (cuda, cuBLAS chosen or automatic, and a
// layout it takes).
bool on_cublas(const char* op, Device d, const GemmShape& g) {
  if (!d.is_cuda()) return false;
  const GpuGemm choice = gpu_gemm();
  EMBER_CHECK_DEVICE(choice != GpuGemm::cublas || gpu_gemm_has_cublas(), op,
                     ": EMBER_GEMM=cublas, but this build of Ember has no cuBLAS (rebuild "
                     "with cuBLAS found, or set EMBER_GEMM=ember)");
#if EMBER_HAVE_CUBLAS
  return choice != GpuGemm::ember && cublas::gemm_supported(g);
#else
  (void)g;
  return false;
#endif
}

#if EMBER_HAVE_CUBLAS
// A library call's line in the op trace (Note [Op trace]): dtype and sizes.
std::string gemm_trace(DType t, const GemmShape& g) {
  if (!trace::enabled()) return {};
  std::ostringstream os;
  os << dtype_name(t) << " m=" << g.m << " n=" << g.n << " k=" << g.k << " batch=" << g.batch;
  return os.str();
}
#endif

// Runs C = A x B (float32 or float64) on `d` through cuBLAS or the device's own kernel.
void gemm_run(const char* op, DType t, Device d, const GemmShape& g, const void* a, const void* b,
              void* c) {
  if (on_cublas(op, d, g)) {
#if EMBER_HAVE_CUBLAS
    trace::Scope traced("library", "cublas gemm", d, gemm_trace(t, g));  // Note [Op trace]
    return cublas::gemm_batched(t, g, a, b, c, d.index, stream_of(d));
#endif
  }
  kernels_for(d).gemm_batched(t, g, a, b, c, stream_of(d));
}

// Note [Half products]: a float16 or bfloat16 product accumulates in float32 and rounds once to
// the operands' dtype. cuBLAS runs it on cuda where it runs float32 products; otherwise the
// device's gemm_tc kernel: Ember's Tensor Core kernels on cuda and emu (tc_gemm() says which),
// the float32 product of widened copies on the cpu. Where no Tensor Core kernel can run it
// (bfloat16 before sm_80) the automatic choice falls back to the float32 product of widened
// copies (returns false), said once under EMBER_LOG=select; a kernel asked for by name is an
// error instead.
bool gemm_half(const char* op, const Tensor& a, const Tensor& b, const GemmShape& g, Tensor& out) {
  const Device d = a.device();
  kernels::TcGemm tc;
  tc.shape = g;
  tc.in = tc.out = a.dtype();
  if (on_cublas(op, d, g)) {
#if EMBER_HAVE_CUBLAS
    trace::Scope traced("library", "cublas gemm_ex", d, gemm_trace(a.dtype(), g));
    cublas::gemm_tc(tc, a.data_ptr(), b.data_ptr(), out.data_ptr(), d.index, stream_of(d));
    return true;
#endif
  }
  if (d.is_gpu_like()) tc.kernel = tc_gemm();
  const kernels::KernelTable& k = kernels_for(d);
  const kernels::TcGemmPlan p = k.gemm_tc_plan(tc, a.data_ptr(), b.data_ptr(), out.data_ptr());
  static std::atomic<bool> said[3][5] = {};  // [device type][kernel], under EMBER_LOG=select
  const bool say =
      log_select() && !said[static_cast<int>(d.type)][static_cast<int>(p.kernel)].exchange(true);
  if (!p.supported) {
    EMBER_CHECK_DEVICE(tc.kernel == TcKernel::automatic, op,
                       ": EMBER_GEMM_TC=", kernels::tc_kernel_name(tc.kernel), " cannot run a ",
                       a.dtype(), " product on ", d.str(), ": ", p.why);
    if (say)
      std::cerr << "ember select: " << op << " " << a.dtype() << " on " << d.str()
                << " -> the float32 product of widened copies (" << p.why << ")\n";
    return false;
  }
  if (say)
    std::cerr << "ember select: " << op << " " << a.dtype() << " on " << d.str() << " -> "
              << kernels::tc_kernel_name(p.kernel) << " (" << p.bm << " x " << p.bn << " tiles)\n";
  k.gemm_tc_batched(tc, a.data_ptr(), b.data_ptr(), out.data_ptr(), stream_of(d));
  return true;
}

void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  check_same_device(op, {&a, &b});
  EMBER_CHECK_DTYPE(a.dtype() == b.dtype(), op, ": expected both operands of the same dtype, got ",
                    a.dtype(), " and ", b.dtype(), " (convert one with .to())");
  EMBER_CHECK_DTYPE(is_floating(a.dtype()), op,
                    ": expected floating operands (float32, float64, float16 or bfloat16), got ",
                    a.dtype(), " (convert with .to(kFloat32))");
}

// a: [..., m, k], b: [..., k, n] (both at least 2-D) -> [broadcast batch..., m, n].
Tensor batched(const char* op, const Tensor& a, const Tensor& b, const Shape& shown_a,
               const Shape& shown_b) {
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  EMBER_CHECK_SHAPE(b.size(-2) == k, op, ": inner sizes differ: shapes ", shown_a, " and ", shown_b,
                    " cannot be multiplied (expected b's dim -2 to be ", k, ", got ", b.size(-2),
                    ")");
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(a_batch, b_batch, op);
  } catch (const ShapeError&) {
    EMBER_THROW(ShapeError, op, ": batch dims ", a_batch, " and ", b_batch, " of shapes ", shown_a,
                " and ", shown_b, " do not broadcast");
  }
  const size_t nb = batch.size();
  Shape a_batch_strides(nb, 0), b_batch_strides(nb, 0);
  for (size_t i = 0; i < a_batch.size(); ++i)
    if (a_batch[i] != 1) a_batch_strides[nb - a_batch.size() + i] = a.strides()[i];
  for (size_t i = 0; i < b_batch.size(); ++i)
    if (b_batch[i] != 1) b_batch_strides[nb - b_batch.size() + i] = b.strides()[i];
  Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor out = empty(out_shape, {a.dtype(), a.device()});
  if (out.numel() == 0) return out;
  GemmShape g;
  g.m = m, g.n = n, g.k = k;
  g.batch = checked_numel(batch);
  if (!make_strided_index<2>(batch, {a_batch_strides, b_batch_strides}, g.batch_index)) {
    // Batch dims that do not merge into kMaxDims: the operands expanded and made contiguous,
    // whose batch dims then merge into one.
    Shape a_full = batch, b_full = batch;
    a_full.insert(a_full.end(), {m, k});
    b_full.insert(b_full.end(), {k, n});
    const Tensor ac = a.expand(a_full).contiguous(), bc = b.expand(b_full).contiguous();
    return batched(op, ac, bc, shown_a, shown_b);
  }
  g.a_row = a.stride(-2), g.a_col = a.stride(-1), g.b_row = b.stride(-2), g.b_col = b.stride(-1);
  if (is_half(a.dtype())) {
    if (gemm_half(op, a, b, g, out)) return out;
    return batched(op, a.to(kFloat32), b.to(kFloat32), shown_a, shown_b).to(a.dtype());
  }
  gemm_run(op, a.dtype(), a.device(), g, a.data_ptr(), b.data_ptr(), out.data_ptr());
  return out;
}

}  // namespace

bool gpu_gemm_has_cublas() {
  return EMBER_HAVE_CUBLAS;
}

void set_gpu_gemm(GpuGemm g) {
  EMBER_CHECK_DEVICE(g != GpuGemm::cublas || gpu_gemm_has_cublas(),
                     "set_gpu_gemm: this build of Ember has no cuBLAS");
  g_gemm_api.store(static_cast<int>(g));
}

GpuGemm gpu_gemm() {
  const int v = g_gemm_api.load();
  return v < 0 ? gemm_from_env() : static_cast<GpuGemm>(v);
}

const char* gpu_gemm_name(GpuGemm g) {
  switch (g) {
    case GpuGemm::automatic:
      return "auto";
    case GpuGemm::ember:
      return "ember";
    case GpuGemm::cublas:
      return "cublas";
  }
  return "?";
}

void set_tc_gemm(TcKernel k) {
  EMBER_CHECK_VALUE(k == TcKernel::automatic || k == TcKernel::wmma || k == TcKernel::mma_sync ||
                        k == TcKernel::wgmma,
                    "set_tc_gemm: expected automatic, wmma, mma_sync or wgmma, got ",
                    kernels::tc_kernel_name(k));
  g_tc_api.store(static_cast<int>(k));
}

TcKernel tc_gemm() {
  const int v = g_tc_api.load();
  return v < 0 ? tc_from_env() : static_cast<TcKernel>(v);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands("matmul", a, b);
  EMBER_CHECK_SHAPE(a.dim() >= 1 && b.dim() >= 1,
                    "matmul: both operands need at least 1 dim, got shapes ", a.shape(), " and ",
                    b.shape());
  // 1-D operands become a row (left) or a column (right); the added dim is removed afterwards.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  Tensor out = batched("matmul", a2, b2, a.shape(), b.shape());
  if (b.dim() == 1) out = out.squeeze(-1);
  if (a.dim() == 1) out = out.squeeze(-2 + (b.dim() == 1 ? 1 : 0));
  return out;
}

Tensor mm(const Tensor& a, const Tensor& b) {
  check_operands("mm", a, b);
  EMBER_CHECK_SHAPE(a.dim() == 2 && b.dim() == 2, "mm: expected 2-D operands, got shapes ",
                    a.shape(), " and ", b.shape());
  return batched("mm", a, b, a.shape(), b.shape());
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_operands("bmm", a, b);
  EMBER_CHECK_SHAPE(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0),
                    "bmm: expected 3-D operands with the same batch size, got shapes ", a.shape(),
                    " and ", b.shape());
  return batched("bmm", a, b, a.shape(), b.shape());
}

}  // namespace ember::ops

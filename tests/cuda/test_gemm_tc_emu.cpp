// The Tensor Core GEMM (gemm_tc_batched, kernels/cuda/gemm_tc.cu) on emu() in every thread order,
// and the cpu's entry, against float64 loops on the same rounded inputs (matmul_reference):
// wmma and mma_sync, float16 and bfloat16 operands, float32, float16 and bfloat16 results, the
// four transpose combinations, alpha and beta, odd sizes (partial tiles in M, N and K), M/N/K of
// 1 and K = 0, operands offset by one element (staged by plain loads instead of cp.async), both
// mma tiles, batches with a broadcast operand, and more row tiles and batch items than a grid
// dim holds. The budgets (relative RMS against float64, for results of at least 256 elements):
// 4e-6 for float32 results, 3e-4 for float16 and 2.5e-3 for bfloat16; every element also within
// half an ulp of its dtype plus float32's accumulation error over K terms.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "cuda/cuda_test_util.h"
#include "kernels/kernel_table.h"
#include "ops/matmul.h"

namespace ember::test {
namespace {

using kernels::TcGemm;
using kernels::TcGemmPlan;
using kernels::TcKernel;

// An operand [batch..., r, c]: row-major, or stored [..., c, r] and transposed; optionally one
// element past the start of its allocation (rows no longer 16-byte aligned).
Tensor operand(const Shape& shape, DType t, bool transposed, bool offset, Device dev,
               std::mt19937& g) {
  Shape stored = shape;
  const size_t nd = stored.size();
  if (transposed) std::swap(stored[nd - 1], stored[nd - 2]);
  int64_t n = 1;
  for (int64_t s : stored) n *= s;
  Tensor x = random_tensor({n + 1}, t, -1, 1, g).to(dev);
  x = x.slice(0, offset ? 1 : 0, n + (offset ? 1 : 0)).view(stored);
  return transposed ? x.transpose(-1, -2) : x;
}

// The gemm of a [.., m, k] and b [.., k, n] (2-D, or 3-D with one batch dim, broadcast where a
// batch stride is 0).
TcGemm gemm_of(const Tensor& a, const Tensor& b, DType out, float alpha, float beta, TcKernel k) {
  TcGemm g;
  auto& s = g.shape;
  s.m = a.size(-2), s.k = a.size(-1), s.n = b.size(-1);
  s.a_row = a.stride(-2), s.a_col = a.stride(-1), s.b_row = b.stride(-2), s.b_col = b.stride(-1);
  if (a.dim() == 3) {
    s.batch = a.size(0);
    s.batch_index.ndim = 1;
    s.batch_index.sizes[0] = s.batch;
    s.batch_index.strides[0][0] = a.stride(0);
    s.batch_index.strides[1][0] = b.stride(0);
  }
  g.in = a.dtype(), g.out = out, g.alpha = alpha, g.beta = beta, g.kernel = k;
  return g;
}

double rms_budget(DType out) {
  return out == kFloat32 ? 4e-6 : out == kFloat16 ? 3e-4 : 2.5e-3;
}

// Runs g on `dev` into c (which holds C's old values) and checks it against the float64 product.
void check_gemm(Device dev, const TcGemm& g, const Tensor& a, const Tensor& b, Tensor c) {
  CAPTURE(g.shape.m);
  CAPTURE(g.shape.n);
  CAPTURE(g.shape.k);
  CAPTURE(g.in);
  CAPTURE(g.out);
  CAPTURE(g.alpha);
  CAPTURE(g.beta);
  const std::vector<double> c0 = c.to_vector<double>();
  const auto& table = kernels_for(dev);
  const TcGemmPlan p = table.gemm_tc_plan(g, a.data_ptr(), b.data_ptr(), c.data_ptr());
  REQUIRE_MESSAGE(p.supported, p.why);
  table.gemm_tc_batched(g, a.data_ptr(), b.data_ptr(), c.data_ptr(), gpu::current_stream(dev));
  const std::vector<double> got = c.to_vector<double>();
  const auto [shape, prod] =
      matmul_reference(a.shape(), a.to_vector<double>(), b.shape(), b.to_vector<double>());
  std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (double& v : va) v = std::abs(v);
  for (double& v : vb) v = std::abs(v);
  const auto [shape_abs, prod_abs] = matmul_reference(a.shape(), va, b.shape(), vb);
  REQUIRE(got.size() == prod.size());
  double err2 = 0, want2 = 0;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = g.alpha * prod[i] + (g.beta != 0 ? g.beta * c0[i] : 0.0);
    const double scale =
        std::abs(g.alpha) * prod_abs[i] + (g.beta != 0 ? std::abs(g.beta * c0[i]) : 0.0);
    const double tol = half_ulp(want, g.out) + 1.2e-7 * double(g.shape.k + 2) * scale;
    err2 += (got[i] - want) * (got[i] - want), want2 += want * want;
    if (!(std::abs(got[i] - want) <= tol) && bad++ < 5)
      FAIL_CHECK("element ", i, ": got ", got[i], ", want ", want, " (tolerance ", tol, ")");
  }
  if (got.size() >= 256 && want2 > 0) {
    CAPTURE(std::sqrt(err2 / want2));
    CHECK(std::sqrt(err2 / want2) <= rms_budget(g.out));
  }
}

// C's old values, for beta: random in its dtype (NaN when beta is 0: it must not be read).
Tensor old_c(const Shape& shape, DType out, float beta, Device dev, std::mt19937& g) {
  if (beta == 0) return full(shape, std::nan(""), {out, dev});
  return random_tensor(shape, out, -1, 1, g).to(dev);
}

struct Mnk {
  int64_t m, n, k;
};

}  // namespace

TEST_CASE("gemm_tc on the GPU: wmma and mma_sync, every dtype, transposition and odd size") {
  std::mt19937 g(fresh_seed());
  const Device dev = emu();
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (TcKernel kernel : {TcKernel::wmma, TcKernel::mma_sync}) {
      CAPTURE(std::string(kernels::tc_kernel_name(kernel)));
      for (DType in : {kFloat16, kBFloat16}) {
        for (DType out : {kFloat32, kFloat16, kBFloat16}) {
          for (int form = 0; form < 4; ++form) {
            const bool ta = form & 1, tb = form & 2;
            CAPTURE(ta);
            CAPTURE(tb);
            // Partial tiles in M, N and K; single rows, columns and k; a full 64 x 64 tile.
            for (const Mnk& s : {Mnk{37, 45, 70}, Mnk{1, 9, 1}, Mnk{17, 1, 8}, Mnk{64, 64, 32}}) {
              const Tensor a = operand({s.m, s.k}, in, ta, false, dev, g);
              const Tensor b = operand({s.k, s.n}, in, tb, false, dev, g);
              const float alpha = form == 3 ? -0.5f : 1.0f, beta = form == 1 ? 0.75f : 0.0f;
              check_gemm(dev, gemm_of(a, b, out, alpha, beta, kernel), a, b,
                         old_c({s.m, s.n}, out, beta, dev, g));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("gemm_tc mma_sync: cp.async where operands are aligned, plain loads where not") {
  std::mt19937 g(fresh_seed());
  const Device dev = emu();
  const auto& table = kernels_for(dev);
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (int form = 0; form < 16; ++form) {
      const bool ta = form & 1, tb = form & 2, oa = form & 4, ob = form & 8;
      CAPTURE(form);
      // Leading dims that are multiples of 8 in either layout; partial tiles in M, N and K.
      const Tensor a = operand({56, 40}, kFloat16, ta, oa, dev, g);
      const Tensor b = operand({40, 72}, kFloat16, tb, ob, dev, g);
      const TcGemm gm = gemm_of(a, b, kFloat32, 1, 0, TcKernel::mma_sync);
      const TcGemmPlan p = table.gemm_tc_plan(gm, a.data_ptr(), b.data_ptr(), nullptr);
      CHECK(p.a_k_major == !ta);
      CHECK(p.b_k_major == tb);
      CHECK(p.a_async == !oa);
      CHECK(p.b_async == !ob);
      check_gemm(dev, gm, a, b, old_c({56, 72}, kFloat32, 0, dev, g));
    }
    // A leading dimension that is not a multiple of 8 (K = 13): plain loads for A.
    const Tensor a = operand({20, 13}, kBFloat16, false, false, dev, g);
    const Tensor b = operand({13, 24}, kBFloat16, true, false, dev, g);
    const TcGemm gm = gemm_of(a, b, kBFloat16, 1, 0, TcKernel::mma_sync);
    CHECK_FALSE(table.gemm_tc_plan(gm, a.data_ptr(), b.data_ptr(), nullptr).a_async);
    check_gemm(dev, gm, a, b, old_c({20, 24}, kBFloat16, 0, dev, g));
  }
}

TEST_CASE("gemm_tc: the 128 x 128 and 64 x 16 tiles, batches, broadcasts, K = 0") {
  std::mt19937 g(fresh_seed());
  const Device dev = emu();
  const auto& table = kernels_for(dev);
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (TcKernel kernel : {TcKernel::wmma, TcKernel::mma_sync}) {
      CAPTURE(std::string(kernels::tc_kernel_name(kernel)));
      // 4 x 2 x 2 blocks of 128: enough to fill the emulator's 8 multiprocessors twice.
      const Tensor a = operand({4, 130, 40}, kFloat16, false, false, dev, g);
      const Tensor b = operand({4, 40, 140}, kFloat16, true, false, dev, g);
      const TcGemm big = gemm_of(a, b, kFloat32, 1, 0, kernel);
      CHECK(table.gemm_tc_plan(big, a.data_ptr(), b.data_ptr(), nullptr).bm ==
            (kernel == TcKernel::mma_sync && !EMBER_TEST_DEVICE_CUDA ? 128 : 64));
      check_gemm(dev, big, a, b, old_c({4, 130, 140}, kFloat32, 0, dev, g));
      // B repeated along the batch (stride 0), beta reading C.
      const Tensor a3 = operand({3, 33, 24}, kBFloat16, true, false, dev, g);
      const Tensor b3 = operand({1, 24, 20}, kBFloat16, false, false, dev, g).expand({3, 24, 20});
      check_gemm(dev, gemm_of(a3, b3, kFloat16, 2, -1, kernel), a3, b3,
                 old_c({3, 33, 20}, kFloat16, -1, dev, g));
      // At most 16 columns: the narrow 64 x 16 tile.
      const Tensor an = operand({70, 24}, kFloat16, false, false, dev, g);
      const Tensor bn = operand({24, 10}, kFloat16, false, false, dev, g);
      const TcGemm narrow = gemm_of(an, bn, kBFloat16, 1, 0, kernel);
      CHECK(table.gemm_tc_plan(narrow, an.data_ptr(), bn.data_ptr(), nullptr).bn ==
            (kernel == TcKernel::mma_sync ? 16 : 64));
      check_gemm(dev, narrow, an, bn, old_c({70, 10}, kBFloat16, 0, dev, g));
      // K = 0: C = beta C.
      const Tensor a0 = operand({5, 0}, kFloat16, false, false, dev, g);
      const Tensor b0 = operand({0, 7}, kFloat16, false, false, dev, g);
      check_gemm(dev, gemm_of(a0, b0, kFloat32, 1, 0.5f, kernel), a0, b0,
                 old_c({5, 7}, kFloat32, 0.5f, dev, g));
    }
  }
}

TEST_CASE("gemm_tc with more row tiles and batch items than a grid dim holds") {
  std::mt19937 g(fresh_seed());
  const Device dev = emu();
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    const ScopedGridLimit limit(3);
    CAPTURE(cfg.name());
    if (limit.value() > 1000) break;  // on a GPU the limit is 65535: too many rows to test
    const int64_t m = limit.value() * 64 + 1, batch = 2 * limit.value() + 1;
    for (TcKernel kernel : {TcKernel::wmma, TcKernel::mma_sync}) {
      const Tensor a = operand({m, 8}, kFloat16, false, false, dev, g);
      const Tensor b = operand({8, 8}, kFloat16, false, false, dev, g);
      check_gemm(dev, gemm_of(a, b, kFloat32, 1, 0, kernel), a, b,
                 old_c({m, 8}, kFloat32, 0, dev, g));
      const Tensor ab = operand({batch, 5, 8}, kBFloat16, false, false, dev, g);
      const Tensor bb = operand({batch, 8, 6}, kBFloat16, true, false, dev, g);
      check_gemm(dev, gemm_of(ab, bb, kFloat32, 1, 0, kernel), ab, bb,
                 old_c({batch, 5, 6}, kFloat32, 0, dev, g));
    }
  }
}

// wgmma (kernels/cuda/gemm_wgmma.cu) is sm_90a code: on an sm_90 GPU it runs every dtype,
// layout (cp.async and plain loads), odd size, batch and beta; everywhere else (the emulator,
// other GPUs, builds without sm_90) asking for it is refused with the reason.
TEST_CASE("gemm_tc wgmma on an sm_90 GPU, refused with the reason elsewhere") {
  std::mt19937 g(fresh_seed());
  const Device dev = emu();
  const auto& table = kernels_for(dev);
  const Tensor p0 = operand({8, 8}, kFloat16, false, false, dev, g);
  const TcGemm probe = gemm_of(p0, p0, kFloat32, 1, 0, TcKernel::wgmma);
  const TcGemmPlan pp = table.gemm_tc_plan(probe, p0.data_ptr(), p0.data_ptr(), nullptr);
  if (!pp.supported) {
    const std::string why = pp.why;
    CAPTURE(why);
    CHECK(why.find("wgmma") != std::string::npos);
    if (!EMBER_TEST_DEVICE_CUDA) CHECK(why.find("GPU-only") != std::string::npos);
    Tensor c = empty({8, 8}, {kFloat32, dev});
    CHECK_THROWS_AS(table.gemm_tc_batched(probe, p0.data_ptr(), p0.data_ptr(), c.data_ptr(),
                                          gpu::current_stream(dev)),
                    std::invalid_argument);
    if (EMBER_TEST_DEVICE_CUDA) MESSAGE("wgmma not run on this GPU: ", why);
    return;
  }
  CHECK(pp.bm == 128);
  CHECK(pp.bn == 128);
  for (DType in : {kFloat16, kBFloat16}) {
    for (DType out : {kFloat32, kFloat16, kBFloat16}) {
      for (int form = 0; form < 16; ++form) {
        const bool ta = form & 1, tb = form & 2, oa = form & 4, ob = form & 8;
        CAPTURE(form);
        // Partial tiles everywhere; several K stages (more than the pipeline holds); one row,
        // one column; whole 128 x 128 tiles.
        for (const Mnk& s : {Mnk{37, 45, 70}, Mnk{300, 260, 456}, Mnk{1, 9, 1}, Mnk{17, 1, 8},
                             Mnk{128, 128, 64}}) {
          const Tensor a = operand({s.m, s.k}, in, ta, oa, dev, g);
          const Tensor b = operand({s.k, s.n}, in, tb, ob, dev, g);
          const float alpha = form == 3 ? -0.5f : 1.0f, beta = form == 1 ? 0.75f : 0.0f;
          const TcGemm gm = gemm_of(a, b, out, alpha, beta, TcKernel::wgmma);
          if (s.m == 300) {
            const TcGemmPlan p = table.gemm_tc_plan(gm, a.data_ptr(), b.data_ptr(), nullptr);
            CHECK(p.kernel == TcKernel::wgmma);
            CHECK(p.a_k_major == !ta);
            CHECK(p.b_k_major == tb);
            CHECK(p.a_async == !oa);
            CHECK(p.b_async == !ob);
          }
          check_gemm(dev, gm, a, b, old_c({s.m, s.n}, out, beta, dev, g));
        }
      }
    }
  }
  // Batches with a broadcast operand, beta reading C; K = 0.
  const Tensor a3 = operand({3, 133, 72}, kBFloat16, true, false, dev, g);
  const Tensor b3 = operand({1, 72, 140}, kBFloat16, false, false, dev, g).expand({3, 72, 140});
  check_gemm(dev, gemm_of(a3, b3, kFloat16, 2, -1, TcKernel::wgmma), a3, b3,
             old_c({3, 133, 140}, kFloat16, -1, dev, g));
  const Tensor a0 = operand({5, 0}, kFloat16, false, false, dev, g);
  const Tensor b0 = operand({0, 7}, kFloat16, false, false, dev, g);
  check_gemm(dev, gemm_of(a0, b0, kFloat32, 1, 0.5f, TcKernel::wgmma), a0, b0,
             old_c({5, 7}, kFloat32, 0.5f, dev, g));
}

TEST_CASE("gemm_tc on the cpu: the float32 product of widened copies, alpha and beta") {
  std::mt19937 g(fresh_seed());
  const Device cpu = kCPU;
  for (DType in : {kFloat16, kBFloat16}) {
    for (DType out : {kFloat32, kFloat16, kBFloat16}) {
      const Tensor a = operand({2, 37, 21}, in, true, true, cpu, g);
      const Tensor b = operand({2, 21, 30}, in, false, true, cpu, g);
      check_gemm(cpu, gemm_of(a, b, out, 1.5f, 0.25f, TcKernel::automatic), a, b,
                 old_c({2, 37, 30}, out, 0.25f, cpu, g));
    }
  }
}

TEST_CASE("gemm_tc refuses what it cannot run, saying why") {
  std::mt19937 g(fresh_seed());
  const Tensor a = operand({4, 4}, kFloat16, false, false, emu(), g);
  TcGemm bad = gemm_of(a, a, kFloat32, 1, 0, TcKernel::mma_sync);
  bad.in = kFloat32;
  const TcGemmPlan p = kernels_for(emu()).gemm_tc_plan(bad, a.data_ptr(), a.data_ptr(), nullptr);
  CHECK_FALSE(p.supported);
  CHECK(std::string(p.why).find("float16 or bfloat16") != std::string::npos);
  Tensor c = empty({4, 4}, {kFloat32, emu()});
  CHECK_THROWS_AS(kernels_for(emu()).gemm_tc_batched(bad, a.data_ptr(), a.data_ptr(), c.data_ptr(),
                                                     gpu::current_stream(emu())),
                  std::invalid_argument);
  bad.in = kFloat16;
  bad.out = kInt32;
  CHECK_FALSE(kernels_for(emu()).gemm_tc_plan(bad, a.data_ptr(), a.data_ptr(), nullptr).supported);
  // The cpu has no Tensor Core kernels to ask for.
  const Tensor ac = a.to(kCPU);
  TcGemm on_cpu = gemm_of(ac, ac, kFloat32, 1, 0, TcKernel::wmma);
  const TcGemmPlan pc =
      kernels_for(kCPU).gemm_tc_plan(on_cpu, ac.data_ptr(), ac.data_ptr(), nullptr);
  CHECK_FALSE(pc.supported);
  CHECK(std::string(pc.why).find("no Tensor Cores") != std::string::npos);
  Tensor cc = empty({4, 4}, {kFloat32, kCPU});
  CHECK_THROWS_AS(kernels_for(kCPU).gemm_tc_batched(on_cpu, ac.data_ptr(), ac.data_ptr(),
                                                    cc.data_ptr(), nullptr),
                  DTypeError);
}

TEST_CASE("half matmul runs the chosen Tensor Core kernel; bad choices are errors") {
  std::mt19937 g(fresh_seed());
  const Device dev = emu();
  const Tensor a = operand({2, 19, 23}, kBFloat16, false, false, dev, g);
  const Tensor b = operand({23, 11}, kBFloat16, true, false, dev, g);
  const auto [shape, want] =
      matmul_reference(a.shape(), a.to_vector<double>(), b.shape(), b.to_vector<double>());
  for (TcKernel k : {TcKernel::wmma, TcKernel::mma_sync, TcKernel::automatic}) {
    ops::set_tc_gemm(k);
    CHECK(ops::tc_gemm() == k);
    const Tensor got = ops::matmul(a, b);
    CHECK(got.dtype() == kBFloat16);
    check_close(got, from_vector(want, shape), 8e-3, 2e-5 * 23);
  }
  CHECK_THROWS_AS(ops::set_tc_gemm(TcKernel::cpu), ValueError);
  ops::set_tc_gemm(TcKernel::automatic);
}

}  // namespace ember::test

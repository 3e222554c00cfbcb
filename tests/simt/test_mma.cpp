// The Tensor Core instructions on the emulator (kernels/cuda/tensor_core.cuh): every lane's
// registers of mma.sync and ldmatrix against the PTX ISA's fragment tables, written out here
// from the ISA's text; cp.async's groups; and a multi-stage GEMM on all three against a float64
// reference of the rounded inputs. The `gpu` executable runs the same on cuda:0 (Note [Tensor
// Core tests on hardware] in simt/kernel_buffer.h).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/half.h"
#include "simt/kernel_buffer.h"
#include "simt/kernels_mma.cuh"

namespace ember::simt_test {
namespace {

// --- The PTX ISA's tables, as its text gives them ---------------------------------------------
// groupID = %laneid >> 2, threadID_in_group = %laneid % 4; (row, col) of element i.
struct Pos {
  int row, col;
  bool operator==(const Pos& o) const { return row == o.row && col == o.col; }
};

// mma.m16n8k16, A (.f16/.bf16): row = groupID for a_i where 0 <= i < 2 || 4 <= i < 6, else
// groupID + 8; col = threadID_in_group * 2 + (i & 0x1) for i < 4, the same + 8 for i >= 4.
Pos ptx_a_k16(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  return {(i < 2 || (4 <= i && i < 6)) ? group : group + 8,
          i < 4 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8};
}
// mma.m16n8k16, B: row = threadID_in_group * 2 + (i & 0x1) for b_i where i < 2, the same + 8
// for i >= 2; col = groupID.
Pos ptx_b_k16(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  return {i < 2 ? tig * 2 + (i & 1) : tig * 2 + (i & 1) + 8, group};
}
// mma.m16n8k8, A: row = groupID for a0 and a1, groupID + 8 for a2 and a3;
// col = threadID_in_group * 2 + (i & 0x1).
Pos ptx_a_k8(int lane, int i) {
  const int group = lane >> 2, tig = lane % 4;
  return {i < 2 ? group : group + 8, tig * 2 + (i & 1)};
}
// mma.m16n8k8, B: row = threadID_in_group * 2 + i for b_i, i = 0, 1; col = groupID.
Pos ptx_b_k8(int lane, int i) {
  return {(lane % 4) * 2 + i, lane >> 2};
}
// C and D of both shapes (.f32): row = groupID for c0 and c1, groupID + 8 for c2 and c3;
// col = threadID_in_group * 2 + (i & 0x1).
Pos ptx_c(int lane, int i) {
  return {i < 2 ? (lane >> 2) : (lane >> 2) + 8, (lane % 4) * 2 + (i & 1)};
}

// One mma.sync configuration: shape, input type and its tables.
struct MmaCase {
  MmaShape shape;
  bool bf16;
  int k;        // 16 or 8
  int a_elems;  // per lane: 8 or 4
  int b_elems;  // per lane: 4 or 2
  Pos (*a)(int, int);
  Pos (*b)(int, int);
  const char* name;
};
const MmaCase kMmaCases[] = {
    {MmaShape::M16N8K16, false, 16, 8, 4, ptx_a_k16, ptx_b_k16, "m16n8k16 f16"},
    {MmaShape::M16N8K16, true, 16, 8, 4, ptx_a_k16, ptx_b_k16, "m16n8k16 bf16"},
    {MmaShape::M16N8K8, false, 8, 4, 2, ptx_a_k8, ptx_b_k8, "m16n8k8 f16"},
    {MmaShape::M16N8K8, true, 8, 4, 2, ptx_a_k8, ptx_b_k8, "m16n8k8 bf16"},
};

uint16_t bits16(float v, bool bf16) {
  return bf16 ? float_to_bf16_bits(v) : float_to_half_bits(v);
}

// The lanes' registers, each element i of lane l in half i & 1 of register i / 2 (the ISA's
// "elements (low to high)").
struct Registers {
  KernelBuffer<uint32_t> a = KernelBuffer<uint32_t>(32 * 4, 0);
  KernelBuffer<uint32_t> b = KernelBuffer<uint32_t>(32 * 2, 0);
  KernelBuffer<float> c = KernelBuffer<float>(32 * 4, 0.0f);
  void set_a(int lane, int i, float v, bool bf16) { set(a, 4 * lane + i / 2, i & 1, v, bf16); }
  void set_b(int lane, int i, float v, bool bf16) { set(b, 2 * lane + i / 2, i & 1, v, bf16); }
  static void set(KernelBuffer<uint32_t>& r, int at, int half, float v, bool bf16) {
    r[at] = (r[at] & ~(0xffffu << (16 * half))) | uint32_t(bits16(v, bf16)) << (16 * half);
  }
};

// A matrix placed into the lanes' registers by the tables.
void place_a(Registers& r, const MmaCase& mc, float (*value)(int row, int col)) {
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < mc.a_elems; ++i) {
      const Pos p = mc.a(l, i);
      r.set_a(l, i, value(p.row, p.col), mc.bf16);
    }
}
void place_b(Registers& r, const MmaCase& mc, float (*value)(int row, int col)) {
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < mc.b_elems; ++i) {
      const Pos p = mc.b(l, i);
      r.set_b(l, i, value(p.row, p.col), mc.bf16);
    }
}

// D of one mma.sync, read back through the C/D table: d[row][col].
std::vector<std::vector<float>> run_mma(const MmaCase& mc, const Registers& r) {
  KernelBuffer<float> d(32 * 4, -1.0f);
  EMBER_LAUNCH(mma_probe_kernel, dim3(1), dim3(32), 0, nullptr, mc.shape, mc.bf16, r.a.data(),
               r.b.data(), r.c.data(), d.data());
  finish_kernels();
  std::vector<std::vector<float>> out(16, std::vector<float>(8, NAN));
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const Pos p = ptx_c(l, i);
      out[p.row][p.col] = d[4 * l + i];
    }
  return out;
}

}  // namespace

TEST_CASE("mma.sync: the tables cover every element of A, B and C exactly once") {
  for (const MmaCase& mc : kMmaCases) {
    CAPTURE(mc.name);
    std::vector<int> a(16 * mc.k, 0), b(mc.k * 8, 0), c(16 * 8, 0);
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < mc.a_elems; ++i) ++a[mc.a(l, i).row * mc.k + mc.a(l, i).col];
      for (int i = 0; i < mc.b_elems; ++i) ++b[mc.b(l, i).row * 8 + mc.b(l, i).col];
      for (int i = 0; i < 4; ++i) ++c[ptx_c(l, i).row * 8 + ptx_c(l, i).col];
    }
    for (int n : a) REQUIRE(n == 1);
    for (int n : b) REQUIRE(n == 1);
    for (int n : c) REQUIRE(n == 1);
  }
}

TEST_CASE("mma.sync: each element of A, B and C sits where the PTX ISA puts it") {
  for (const Config& cfg : kernel_orders()) {
    CAPTURE(cfg.name());
    ScopedOptions opts(cfg);
    for (const MmaCase& mc : kMmaCases) {
      CAPTURE(mc.name);
      if (mc.bf16 && !has_bf16_tensor_cores()) continue;
      // A: one element 1, the rest 0, against B[k][n] = 1 + k + 16n: D is zero but for the row
      // of that element, which holds row k of B.
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < mc.a_elems; ++i) {
          CAPTURE(l);
          CAPTURE(i);
          Registers r;
          r.set_a(l, i, 1.0f, mc.bf16);
          place_b(r, mc, [](int k, int n) { return float(1 + k + 16 * n); });
          const auto d = run_mma(mc, r);
          const Pos want = mc.a(l, i);
          for (int m = 0; m < 16; ++m)
            for (int n = 0; n < 8; ++n)
              REQUIRE(d[m][n] == (m == want.row ? float(1 + want.col + 16 * n) : 0.0f));
        }
      // B: one element 1 against A[m][k] = 1 + m + 16k: D is zero but for the column of that
      // element, which holds column k of A.
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < mc.b_elems; ++i) {
          CAPTURE(l);
          CAPTURE(i);
          Registers r;
          r.set_b(l, i, 1.0f, mc.bf16);
          place_a(r, mc, [](int m, int k) { return float(1 + m + 16 * k); });
          const auto d = run_mma(mc, r);
          const Pos want = mc.b(l, i);
          for (int m = 0; m < 16; ++m)
            for (int n = 0; n < 8; ++n)
              REQUIRE(d[m][n] == (n == want.col ? float(1 + m + 16 * want.row) : 0.0f));
        }
      // C and D: A * B = (m + 1) + 16 (n + 1) (columns 0 and 1 of A, rows 0 and 1 of B) plus
      // C[m][n] = 1024 (8m + n), C placed by its table: each lane's d[i] names its (m, n).
      Registers r;
      place_a(r, mc, [](int m, int k) { return k == 0 ? float(m + 1) : k == 1 ? 1.0f : 0.0f; });
      place_b(r, mc, [](int k, int n) {
        return k == 0 ? 1.0f : k == 1 ? float(16 * (n + 1)) : 0.0f;
      });
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i)
          r.c[4 * l + i] = 1024.0f * (8 * ptx_c(l, i).row + ptx_c(l, i).col);
      const auto d = run_mma(mc, r);
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n)
          REQUIRE(d[m][n] == float(m + 1 + 16 * (n + 1) + 1024 * (8 * m + n)));
    }
  }
}

TEST_CASE("ldmatrix x1, x2, x4 and .trans: each register holds what the PTX ISA says") {
  // Row q of the 32 shared rows holds q * 8 + c in column c; lane j passes row probe_row(j).
  KernelBuffer<uint16_t> rows(32 * 8);
  for (int q = 0; q < 32; ++q)
    for (int c = 0; c < 8; ++c) rows[8 * q + c] = uint16_t(8 * q + c);
  // The ISA: lanes 8m..8m+7 give the addresses of rows 0..7 of matrix m; a group of four lanes
  // loads a row, lane l receiving (in register m) the (l % 4)-th pair of row l / 4 of matrix m;
  // .trans loads the matrix column-major: the pair of rows 2 (l % 4) and 2 (l % 4) + 1 of column
  // l / 4.
  auto element = [](int m, int row, int col) { return uint32_t(8 * probe_row(8 * m + row) + col); };
  const int blocks = 3;
  for (const Config& cfg : kernel_orders()) {
    CAPTURE(cfg.name());
    ScopedOptions opts(cfg);
    for (int matrices : {1, 2, 4})
      for (bool trans : {false, true}) {
        CAPTURE(matrices);
        CAPTURE(trans);
        KernelBuffer<uint32_t> out(128 * blocks, 0xdeadbeefu);
        EMBER_LAUNCH(ldmatrix_probe_kernel, dim3(blocks), dim3(32), 0, nullptr, rows.data(),
                     matrices, trans, out.data());
        finish_kernels();
        for (int blk = 0; blk < blocks; ++blk)
          for (int l = 0; l < 32; ++l)
            for (int m = 0; m < 4; ++m) {
              CAPTURE(l);
              CAPTURE(m);
              const int g = l / 4, t = l % 4;
              uint32_t want = 0;
              if (m < matrices)
                want = trans ? element(m, 2 * t, g) | element(m, 2 * t + 1, g) << 16
                             : element(m, g, 2 * t) | element(m, g, 2 * t + 1) << 16;
              REQUIRE(out[128 * blk + 4 * l + m] == want);
            }
      }
  }
}

TEST_CASE("cp.async: wait_group N leaves the newest N groups pending; zero-fill") {
  KernelBuffer<unsigned char> src(16);
  for (int i = 0; i < 16; ++i) src[i] = static_cast<unsigned char>(i + 1);
  for (const Config& cfg : kernel_orders()) {
    CAPTURE(cfg.name());
    ScopedOptions opts(cfg);
    KernelBuffer<unsigned char> out(64, 0);
    EMBER_LAUNCH(cp_async_groups_kernel, dim3(1), dim3(1), 0, nullptr, src.data(), out.data());
    finish_kernels();
    for (int i = 0; i < 16; ++i) {
      CAPTURE(i);
      CHECK(out[i] == src[i]);  // the older group landed
      // The newer one not yet: poison on the emulator; a GPU may have landed it already.
      if (!kOnGpu) CHECK(out[16 + i] == 0xff);
      CHECK(out[32 + i] == src[i]);
      CHECK(out[48 + i] == (i < 6 ? src[i] : 0));
    }
  }
}

TEST_CASE("a multi-stage cp.async, ldmatrix and mma.sync GEMM matches float64 on odd sizes") {
  const unsigned seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  struct Size {
    int M, N, K;
  };
  for (const Size sz : {Size{37, 45, 53}, Size{1, 9, 7}, Size{64, 32, 96}})
    for (bool bf16 : {false, true}) {
      if (bf16 && !has_bf16_tensor_cores()) continue;
      const int M = sz.M, N = sz.N, K = sz.K;
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CAPTURE(bf16);
      const int lda = (K + 7) / 8 * 8, ldb = (N + 7) / 8 * 8;
      // Padding past K and N holds NaN: the kernel must zero-fill the edges, not read them.
      const uint16_t nan16 = bf16 ? 0x7fc0 : 0x7e00;
      KernelBuffer<uint16_t> a(size_t(M) * lda, nan16), b(size_t(K) * ldb, nan16);
      std::vector<double> ar(size_t(M) * K), br(size_t(K) * N);  // the rounded inputs
      auto widen = [&](uint16_t h) {
        return double(bf16 ? bf16_bits_to_float(h) : half_bits_to_float(h));
      };
      for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
          a[size_t(m) * lda + k] = bits16(u(rng), bf16);
          ar[size_t(m) * K + k] = widen(a[size_t(m) * lda + k]);
        }
      for (int k = 0; k < K; ++k)
        for (int n = 0; n < N; ++n) {
          b[size_t(k) * ldb + n] = bits16(u(rng), bf16);
          br[size_t(k) * N + n] = widen(b[size_t(k) * ldb + n]);
        }
      for (const Config& cfg : kernel_orders()) {
        CAPTURE(cfg.name());
        ScopedOptions opts(cfg);
        KernelBuffer<float> c(size_t(M) * N, NAN);
        const dim3 grid((N + 31) / 32, (M + 31) / 32);
        if (bf16) {
          auto* k = &gemm_tc_kernel<__nv_bfloat16>;
          EMBER_LAUNCH(k, grid, dim3(128), gemm_tc_shared_bytes(), nullptr, M, N, K,
                       reinterpret_cast<const __nv_bfloat16*>(a.data()), lda,
                       reinterpret_cast<const __nv_bfloat16*>(b.data()), ldb, c.data());
        } else {
          auto* k = &gemm_tc_kernel<__half>;
          EMBER_LAUNCH(k, grid, dim3(128), gemm_tc_shared_bytes(), nullptr, M, N, K,
                       reinterpret_cast<const __half*>(a.data()), lda,
                       reinterpret_cast<const __half*>(b.data()), ldb, c.data());
        }
        finish_kernels();
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            double ref = 0, mag = 0;
            for (int k = 0; k < K; ++k) {
              ref += ar[size_t(m) * K + k] * br[size_t(k) * N + n];
              mag += std::fabs(ar[size_t(m) * K + k] * br[size_t(k) * N + n]);
            }
            // float32 sums of exact products: K additions, each off by at most 2^-24 of the
            // running sum on the emulator; four times that allows a Tensor Core's adder, which
            // truncates (Fasi et al., "Numerical behavior of NVIDIA tensor cores", 2021).
            REQUIRE(std::fabs(c[size_t(m) * N + n] - ref) <= K * 0x1p-22 * mag + 1e-30);
          }
      }
    }
}

}  // namespace ember::simt_test

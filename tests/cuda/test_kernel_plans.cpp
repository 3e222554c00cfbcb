// The plans of the GPU's tiled kernels (gemm_plan, conv2d_implicit_gemm_plan): for hand-chosen
// shapes, which kernel, tile and split each gets and why, and the kernel run on the device
// through the table with raw pointers (so the plan asserted is the plan that ran) against naive
// float64 loops written here. Shapes that depend on filling the GPU are sized from the device's
// multiprocessor count (8 on emu, the GPU's own on cuda), so the same assertions hold on both.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "kernels/kernel_table.h"
#include "runtime/gpu.h"

namespace ember::test {
namespace {

using kernels::ConvDirection;
using kernels::ConvGemmKernel;
using kernels::ConvGemmPlan;
using kernels::ConvShape;
using kernels::GemmKernel;
using kernels::GemmPlan;
using kernels::GemmShape;

int sms() {
  return gpu::backend(emu()).properties(emu().index).multiprocessors;
}

// Values in [-1, 1) on the device, `offset` elements past a 16-byte-aligned start; `values` are
// what the device holds (rounded to t).
struct Buffer {
  Tensor storage;
  int64_t offset = 0;
  std::vector<double> values;
  void* ptr() const {
    return static_cast<char*>(storage.data_ptr()) + offset * int64_t(itemsize(storage.dtype()));
  }
};

Buffer device_buffer(int64_t n, DType t, std::mt19937& g, int64_t offset = 0) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(size_t(n + offset));
  for (double& x : v) x = u(g);
  Buffer b;
  b.storage = from_vector(v, {n + offset}).to(emu(), t);
  b.offset = offset;
  const std::vector<double> held = b.storage.to_vector<double>();
  b.values.assign(held.begin() + offset, held.end());
  return b;
}

// NaN everywhere, so an element a kernel fails to write shows.
Buffer device_nans(int64_t n, DType t) {
  Buffer b;
  b.storage = from_vector(std::vector<double>(size_t(n > 0 ? n : 1), NAN)).to(emu(), t);
  return b;
}

// got[i] against want[i], each within tol times the sum of the magnitudes of its terms (a
// bound on the rounding of any summation order).
void check_sums(const std::vector<double>& got, const std::vector<double>& want,
                const std::vector<double>& magnitude, double tol) {
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    if (std::abs(got[i] - want[i]) <= tol * magnitude[i] + 1e-300) continue;
    ++bad;
    FAIL_CHECK("element ", i, ": got ", got[i], ", want ", want[i]);
  }
}

// --- GEMM ----------------------------------------------------------------------------------------

// One m x k by k x n product; A and B row-major or stored transposed, optionally one element past
// an aligned start.
struct GemmCase {
  int64_t m, n, k;
  bool a_t = false, b_t = false;
  int64_t a_offset = 0, b_offset = 0;
};

GemmShape gemm_shape(const GemmCase& c) {
  GemmShape s;
  s.m = c.m, s.n = c.n, s.k = c.k;
  s.a_row = c.a_t ? 1 : c.k, s.a_col = c.a_t ? c.m : 1;
  s.b_row = c.b_t ? 1 : c.n, s.b_col = c.b_t ? c.k : 1;
  return s;
}

// The plan of the case on the device; runs it through the table in every thread order and checks
// C against naive float64 loops.
GemmPlan plan_and_run(const GemmCase& c, DType t = kFloat32, std::vector<int64_t> sliced = {}) {
  std::mt19937 g(fresh_seed());
  GemmShape s = gemm_shape(c);
  if (!sliced.empty()) s.a_row = sliced[0], s.a_col = sliced[1];  // any strides
  const int64_t a_span = (s.m - 1) * s.a_row + (s.k - 1) * s.a_col + 1;
  const Buffer a = device_buffer(a_span, t, g, c.a_offset);
  const Buffer b = device_buffer(c.k * c.n, t, g, c.b_offset);
  const kernels::KernelTable& table = kernels_for(emu());
  const GemmPlan p = table.gemm_plan(t, s, a.ptr(), b.ptr(), device_nans(1, t).ptr());
  std::vector<double> want(size_t(c.m * c.n)), mag(want.size());
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j)
      for (int64_t l = 0; l < c.k; ++l) {
        const double x = a.values[size_t(i * s.a_row + l * s.a_col)];
        const double y = b.values[size_t(l * s.b_row + j * s.b_col)];
        want[size_t(i * c.n + j)] += x * y;
        mag[size_t(i * c.n + j)] += std::abs(x * y);
      }
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    const Buffer out = device_nans(c.m * c.n, t);
    table.gemm_batched(t, s, a.ptr(), b.ptr(), out.ptr(), gpu::current_stream(emu()));
    std::vector<double> got = out.storage.to_vector<double>();
    got.resize(want.size());
    check_sums(got, want, mag, t == kFloat32 ? 1e-5 : 1e-13);
  }
  return p;
}

void check_fast(const GemmPlan& p, int bm, int bn) {
  CHECK(p.kernel == GemmKernel::f32_fast);
  CHECK(p.bm == bm);
  CHECK(p.bn == bn);
  CHECK(p.tm == bm / 16);
  CHECK(p.tn == bn / 16);
  CHECK(p.threads == 256);
}

}  // namespace

TEST_CASE("gemm plan: the largest fast tile with two blocks per multiprocessor, padding little") {
  const int64_t s = sms();
  CAPTURE(s);
  // 2 x S blocks of 128 x 128: the biggest tile.
  GemmPlan p = plan_and_run({128 * s, 256, 24});
  check_fast(p, 128, 128);
  CHECK(p.grid[0] == 2);
  CHECK(p.grid[1] == unsigned(s));
  CHECK(p.grid[2] == 1);
  CHECK((p.a_vec && p.b_vec && p.c_vec));
  // Row-major A loads 4 along K, row-major B 4 along N.
  CHECK((!p.a_along_m && p.b_along_n));
  // Half of that: 128 x 64 when M >= N, 64 x 128 when M < N.
  check_fast(plan_and_run({128 * s, 128, 16}), 128, 64);
  check_fast(plan_and_run({128, 128 * s, 16}), 64, 128);
  // A side of 64 (or 130) in a 128 tile would be half (a third) padding: 64 x 128, 128 x 64.
  check_fast(plan_and_run({64, 128 * 4 * s, 16}), 64, 128);
  check_fast(plan_and_run({128 * 4 * s, 130, 16}), 128, 64);
  // Too small to fill anything: 64 x 64, one block.
  p = plan_and_run({64, 64, 5});
  check_fast(p, 64, 64);
  CHECK(p.grid[0] * p.grid[1] * p.grid[2] == 1);
}

TEST_CASE("gemm plan: layouts and alignment decide the loads, not the tile") {
  // Transposed operands: A loads 4 along M, B 4 along K.
  GemmPlan p = plan_and_run({72, 40, 32, true, true});
  check_fast(p, 64, 64);
  CHECK((p.a_along_m && !p.b_along_n));
  CHECK((p.a_vec && p.b_vec && p.c_vec));
  // A view offset by one element: A's loads are scalar, B's and C's stay float4.
  p = plan_and_run({72, 40, 32, false, false, 1, 0});
  check_fast(p, 64, 64);
  CHECK(!p.a_vec);
  CHECK((p.b_vec && p.c_vec));
  p = plan_and_run({72, 40, 32, true, false, 0, 1});
  CHECK((p.a_vec && !p.b_vec));
  // Leading dimensions that are not a multiple of 4 (K = 33 for row-major A and transposed B)
  // cannot be read in float4 either.
  p = plan_and_run({72, 40, 33, false, true});
  check_fast(p, 64, 64);
  CHECK((!p.a_vec && !p.b_vec));
  // N not a multiple of 4: C's rows are not aligned, so the stores are scalar.
  p = plan_and_run({72, 42, 32});
  CHECK(!p.c_vec);
  CHECK(p.a_vec);
}

TEST_CASE("gemm plan: the general kernel for float64 and for operands with no unit stride") {
  GemmPlan p = plan_and_run({70, 40, 9}, kFloat64);
  CHECK(p.kernel == GemmKernel::tiled);
  CHECK((p.bm == 64 && p.bn == 64 && p.tm == 4 && p.tn == 4 && p.threads == 256));
  CHECK(p.grid[0] == 1);
  CHECK(p.grid[1] == 2);
  // A sliced along both matrix dims (strides 2k and 2): no unit stride, so float32 goes there too.
  p = plan_and_run({30, 20, 9}, kFloat32, {18, 2});
  CHECK(p.kernel == GemmKernel::tiled);
  CHECK(p.bm == 64);
  // Nothing to compute; the cpu has no tiles to report.
  GemmShape empty = gemm_shape({0, 5, 3});
  CHECK(kernels_for(emu()).gemm_plan(kFloat32, empty, nullptr, nullptr, nullptr).kernel ==
        GemmKernel::none);
  CHECK(kernels_for(kCPU)
            .gemm_plan(kFloat32, gemm_shape({4, 5, 3}), nullptr, nullptr, nullptr)
            .kernel == GemmKernel::cpu);
}

namespace {

// --- convolution -------------------------------------------------------------------------------

ConvShape conv_shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t pad,
                     int64_t stride = 1, int64_t groups = 1) {
  ConvShape s;
  s.n = n, s.c = c, s.h = h, s.w = w, s.k = k, s.r = r, s.s = r;
  s.stride_h = s.stride_w = stride, s.pad_h = s.pad_w = pad, s.groups = groups;
  s.oh = (h + 2 * pad - r) / stride + 1, s.ow = (w + 2 * pad - r) / stride + 1;
  return s;
}

// The plan of direction d on the device; runs it through the table in every thread order, with a
// workspace of the plan's size, and checks the output against naive float64 sums over every
// (n, k, p, q, c, r, s) of the convolution.
ConvGemmPlan plan_and_run(const ConvShape& s, ConvDirection d, DType t = kFloat32) {
  std::mt19937 g(fresh_seed());
  const kernels::KernelTable& table = kernels_for(emu());
  const ConvGemmPlan p = table.conv2d_implicit_gemm_plan(t, s, d);
  CHECK(p.workspace_bytes == table.conv2d_implicit_gemm_workspace_bytes(t, s, d));
  const Buffer x = device_buffer(s.x_numel(), t, g), w = device_buffer(s.w_numel(), t, g);
  const Buffer y = device_buffer(s.y_numel(), t, g), bias = device_buffer(s.k, t, g);
  const int64_t out_n = d == ConvDirection::forward         ? s.y_numel()
                        : d == ConvDirection::backward_data ? s.x_numel()
                                                            : s.w_numel();
  const Tensor ws = zeros({int64_t(p.workspace_bytes) + 1}, {kUInt8, emu()});
  std::vector<double> want(static_cast<size_t>(out_n)), mag(want.size());
  if (d == ConvDirection::forward)
    for (int64_t i = 0; i < s.y_numel(); ++i)
      want[size_t(i)] = bias.values[size_t(i / (s.oh * s.ow) % s.k)];
  const int64_t cg = s.cg(), kg = s.kg();
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k)
      for (int64_t p_ = 0; p_ < s.oh; ++p_)
        for (int64_t q = 0; q < s.ow; ++q) {
          const int64_t yi = ((n * s.k + k) * s.oh + p_) * s.ow + q;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < s.r; ++r)
              for (int64_t u = 0; u < s.s; ++u) {
                const int64_t ih = p_ * s.stride_h - s.pad_h + r * s.dil_h;
                const int64_t iw = q * s.stride_w - s.pad_w + u * s.dil_w;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                const int64_t xi = ((n * s.c + k / kg * cg + c) * s.h + ih) * s.w + iw;
                const int64_t wi = ((k * cg + c) * s.r + r) * s.s + u;
                // y += x w; dx += dy w; dw += dy x.
                const double term = d == ConvDirection::forward
                                        ? x.values[size_t(xi)] * w.values[size_t(wi)]
                                    : d == ConvDirection::backward_data
                                        ? y.values[size_t(yi)] * w.values[size_t(wi)]
                                        : y.values[size_t(yi)] * x.values[size_t(xi)];
                const int64_t oi = d == ConvDirection::forward         ? yi
                                   : d == ConvDirection::backward_data ? xi
                                                                       : wi;
                want[size_t(oi)] += term;
                mag[size_t(oi)] += std::abs(term);
              }
        }
  if (d == ConvDirection::forward)
    for (int64_t i = 0; i < s.y_numel(); ++i) mag[size_t(i)] += std::abs(want[size_t(i)]);
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    const gpu::Stream stream = gpu::current_stream(emu());
    const Buffer out = device_nans(out_n, t);
    if (d == ConvDirection::forward)
      table.conv2d_fwd_implicit_gemm(t, s, x.ptr(), w.ptr(), bias.ptr(), out.ptr(), ws.data_ptr(),
                                     p.workspace_bytes, stream);
    else if (d == ConvDirection::backward_data)
      table.conv2d_bwd_data_implicit_gemm(t, s, y.ptr(), w.ptr(), out.ptr(), ws.data_ptr(),
                                          p.workspace_bytes, stream);
    else
      table.conv2d_bwd_filter_implicit_gemm(t, s, y.ptr(), x.ptr(), out.ptr(), ws.data_ptr(),
                                            p.workspace_bytes, stream);
    std::vector<double> got = out.storage.to_vector<double>();
    got.resize(want.size());
    check_sums(got, want, mag, t == kFloat32 ? 1e-5 : 1e-13);
  }
  return p;
}

void check_tile(const ConvGemmPlan& p, int bm, int bn, int tn, int threads) {
  CHECK(p.kernel == ConvGemmKernel::tiled);
  CHECK(p.bm == bm);
  CHECK(p.bn == bn);
  CHECK(p.tm == 8);
  CHECK(p.tn == tn);
  CHECK(p.threads == threads);
}

}  // namespace

TEST_CASE("conv plan: the column count picks the width class, the grid picks the tile in it") {
  const int64_t m = sms();
  CAPTURE(m);
  // Forward with 16 filters: the narrow class. N*OH*OW = 512 x S rows fill S blocks of 512 x 16.
  ConvShape s = conv_shape(m, 3, 16, 32, 16, 3, 1);
  ConvGemmPlan p = plan_and_run(s, ConvDirection::forward);
  check_tile(p, 512, 16, 4, 256);
  CHECK((p.rows == 512 * m && p.cols == 16 && p.depth == 27));
  CHECK((p.grid[0] == unsigned(m) && p.grid[1] == 1 && p.grid[2] == 1));
  CHECK((p.splits == 1 && p.workspace_bytes == 0));
  // One image gives one such block: the smaller 256 x 16 (128 threads) makes two.
  s.n = 1;
  p = plan_and_run(s, ConvDirection::forward);
  check_tile(p, 256, 16, 4, 128);
  CHECK(p.grid[0] == 2);
  // float64 never takes 512 x 16 (its shared tiles would not fit).
  s.n = m;
  check_tile(plan_and_run(s, ConvDirection::forward, kFloat64), 256, 16, 4, 128);
  // 100 filters: the wide class, 128 x 128 when S of them fill the GPU.
  p = plan_and_run(conv_shape(2 * m, 4, 8, 8, 100, 3, 1), ConvDirection::forward);
  check_tile(p, 128, 128, 8, 256);
  CHECK(p.grid[0] == unsigned(m));
  // Backward-data's columns are the input channels (40: the <= 64 class); one small image fills
  // nothing, so the last tile of the class, 128 x 32, in two column tiles.
  p = plan_and_run(conv_shape(1, 40, 8, 8, 8, 3, 1), ConvDirection::backward_data);
  check_tile(p, 128, 32, 4, 128);
  CHECK((p.rows == 64 && p.cols == 40 && p.depth == 72));
  CHECK((p.grid[0] == 1 && p.grid[1] == 2));
  // Groups run along z: 4 groups of 8 filters.
  p = plan_and_run(conv_shape(1, 8, 6, 6, 32, 3, 1, 1, 4), ConvDirection::forward);
  CHECK((p.cols == 8 && p.depth == 18 && p.grid[2] == 4));
}

TEST_CASE("conv plan: backward-filter splits a long reduction over few tiles (split-K)") {
  // dw is 27 x 8 (C*R*S x K): one 256 x 16 tile (it pads less than 512 x 16). The reduction over
  // N*OH*OW = 1024 pixels allows 1024 / 256 = 4 splits of at least 32 steps: split-K by 4, each a
  // chunk of 256 positions summed into the workspace, then added in split order.
  ConvShape s = conv_shape(4, 3, 16, 16, 8, 3, 1);
  ConvGemmPlan p = plan_and_run(s, ConvDirection::backward_filter);
  check_tile(p, 256, 16, 4, 128);
  CHECK((p.rows == 27 && p.cols == 8 && p.depth == 1024));
  CHECK((p.splits == 4 && p.chunk == 256));
  CHECK(p.workspace_bytes == 4 * 216 * sizeof(float));
  CHECK((p.grid[0] == 1 && p.grid[1] == 1 && p.grid[2] == 4));
  // 16384 pixels would allow 64 splits, and 64 is also the most there are.
  p = plan_and_run(conv_shape(16, 3, 32, 32, 8, 3, 1), ConvDirection::backward_filter);
  CHECK((p.splits == 64 && p.chunk == 256));
  CHECK(p.grid[2] == 64);
  // 64 pixels are too few to split: dw is written directly, no workspace.
  p = plan_and_run(conv_shape(1, 3, 8, 8, 8, 3, 1), ConvDirection::backward_filter);
  CHECK((p.splits == 1 && p.workspace_bytes == 0 && p.grid[2] == 1));
  // float64 with 64 filters: 128 x 64, never 256 x 64 (it would spill), splits as float32.
  p = plan_and_run(conv_shape(4, 8, 16, 16, 64, 3, 1), ConvDirection::backward_filter, kFloat64);
  check_tile(p, 128, 64, 4, 256);
  CHECK(p.splits == 4);
  CHECK(p.workspace_bytes == 4 * size_t(64 * 8 * 9) * sizeof(double));
}

TEST_CASE("conv plan: nothing to compute, and the cpu's own kernels") {
  const ConvGemmPlan p = kernels_for(emu()).conv2d_implicit_gemm_plan(
      kFloat32, conv_shape(0, 3, 8, 8, 4, 3, 1), ConvDirection::forward);
  CHECK(p.kernel == ConvGemmKernel::none);
  const ConvShape s = conv_shape(2, 3, 8, 8, 4, 3, 1);
  const ConvGemmPlan c =
      kernels_for(kCPU).conv2d_implicit_gemm_plan(kFloat32, s, ConvDirection::backward_filter);
  CHECK(c.kernel == ConvGemmKernel::cpu);
  CHECK(c.workspace_bytes == kernels_for(kCPU).conv2d_implicit_gemm_workspace_bytes(
                                 kFloat32, s, ConvDirection::backward_filter));
}

}  // namespace ember::test

// GEMM kernels on the emu device against float64 loops (matmul_reference): the float32 fast
// path with each of its tiles (128x128, 128x64, 64x128, 64x64, chosen by the block count: the
// emulator has 8 multiprocessors, so 16 blocks take the larger tile), partial edge tiles,
// M/N/K = 1 and K = 0, row-major and transposed operands each aligned or offset by one element
// (no float4), batches with broadcasts, more row tiles and batch items than a grid dim holds
// (under a lowered grid limit); float64 through the general kernel on the same shapes. Every case
// runs in every thread order.
#include <doctest/doctest.h>

#include "cuda/cuda_test_util.h"
#include "ops/matmul.h"

namespace ember::test {
namespace {

// How an operand [..., r, c] is laid out: row-major, or stored [..., c, r] and transposed; each
// either at the start of its allocation or one element past it, so the rows are not 16-byte
// aligned and every load is scalar.
enum class Form { row_major, transposed, row_major_offset, transposed_offset };
constexpr Form kAligned[] = {Form::row_major, Form::transposed};
constexpr Form kAllForms[] = {Form::row_major, Form::transposed, Form::row_major_offset,
                              Form::transposed_offset};

const char* form_name(Form f) {
  const char* names[] = {"row_major", "transposed", "row_major_offset", "transposed_offset"};
  return names[static_cast<int>(f)];
}

Tensor gemm_operand(const Shape& shape, DType t, Form f, std::mt19937& g) {
  const bool transposed = f == Form::transposed || f == Form::transposed_offset;
  const bool offset = f == Form::row_major_offset || f == Form::transposed_offset;
  Shape stored = shape;
  const size_t nd = stored.size();
  if (transposed) std::swap(stored[nd - 1], stored[nd - 2]);
  Tensor x;
  if (offset) {
    int64_t n = 1;
    for (int64_t s : stored) n *= s;
    x = random_tensor({n + 1}, t, -1, 1, g).to(emu()).slice(0, 1, n + 1).view(stored);
  } else {
    x = random_tensor(stored, t, -1, 1, g).to(emu());
  }
  return transposed ? x.transpose(-1, -2) : x;
}

// The product on the device against torch.matmul's rules in float64 loops.
Tensor matmul_f64(const Tensor& a, const Tensor& b) {
  const auto [shape, v] =
      matmul_reference(a.shape(), a.to_vector<double>(), b.shape(), b.to_vector<double>());
  return from_vector(v, shape);
}

void check_matmul(const Tensor& a, const Tensor& b) {
  const Tensor got = ops::matmul(a, b);
  CHECK(got.device() == emu());
  const bool f32 = a.dtype() == kFloat32;
  check_close(got, matmul_f64(a, b), f32 ? 1e-5 : 1e-12, f32 ? 1e-4 : 1e-12);
}

struct Mnk {
  int64_t m, n, k;
};

void check_shapes(const std::vector<Mnk>& shapes, DType t, const Form* forms, int nforms) {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const Mnk& s : shapes) {
      for (int i = 0; i < nforms; ++i) {
        for (int j = 0; j < nforms; ++j) {
          CAPTURE(s.m);
          CAPTURE(s.n);
          CAPTURE(s.k);
          CAPTURE(std::string(form_name(forms[i])));
          CAPTURE(std::string(form_name(forms[j])));
          check_matmul(gemm_operand({s.m, s.k}, t, forms[i], g),
                       gemm_operand({s.k, s.n}, t, forms[j], g));
        }
      }
    }
  }
}

// Partial tiles in every dim, vectors, K = 1 and K = 0, lengths that are and are not multiples
// of 4 (float4 with scalar edges, or scalar throughout).
const std::vector<Mnk> kEdgeShapes = {{130, 129, 17}, {1, 300, 5}, {300, 1, 7}, {1, 1, 1},
                                      {3, 1, 1},      {1, 1, 9},   {67, 5, 1},  {130, 132, 20},
                                      {33, 70, 0},    {65, 63, 9}, {64, 64, 8}};

}  // namespace

TEST_CASE("emu SGEMM fast path: each block tile on full tiles, row-major and transposed") {
  // 512x512: 16 tiles of 128x128; 512x256: 128x64; 256x512: 64x128; 256x256 and 128x384: 64x64.
  check_shapes({{512, 512, 16}, {512, 256, 24}, {256, 512, 24}, {256, 256, 64}, {128, 384, 40}},
               kFloat32, kAligned, 2);
}

TEST_CASE("emu SGEMM fast path: edge tiles and misaligned operands") {
  check_shapes(kEdgeShapes, kFloat32, kAllForms, 4);
  // The large tiles with edges: 128x128 (M and N ragged), 128x64 and 64x128 (K ragged).
  check_shapes({{509, 510, 9}, {500, 252, 13}, {252, 500, 12}}, kFloat32, kAllForms + 1, 2);
}

TEST_CASE("emu SGEMM fast path: batches and broadcasts") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (DType t : {kFloat32, kFloat64}) {
      // Batch strides that are multiples of 4 (float4 loads) and ones that are not (5 x 7).
      check_matmul(gemm_operand({3, 1, 40, 24}, t, Form::row_major, g),
                   gemm_operand({2, 24, 36}, t, Form::row_major, g));
      check_matmul(gemm_operand({2, 5, 7}, t, Form::row_major, g),
                   gemm_operand({2, 7, 6}, t, Form::transposed, g));
      check_matmul(gemm_operand({4, 33, 16}, t, Form::transposed_offset, g),
                   gemm_operand({16, 20}, t, Form::row_major, g));
      // An operand repeated along the batch with stride 0.
      const Tensor a = gemm_operand({1, 70, 12}, t, Form::row_major, g).expand({5, 70, 12});
      check_matmul(a, gemm_operand({5, 12, 68}, t, Form::transposed, g));
    }
  }
}

TEST_CASE("emu DGEMM runs the general kernel on the edge shapes") {
  check_shapes(kEdgeShapes, kFloat64, kAllForms, 4);
}

TEST_CASE("emu GEMM with more row tiles and batch items than a grid dim holds") {
  // Past the grid's y limit in row tiles (at least limit + 1 of them: a tile has at most 128
  // rows for float32 and 64 for float64), and past its z limit in batch items, so blockIdx.y
  // and blockIdx.z loop. The emulator's limit is lowered to 3; on a GPU it is 65535.
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    const ScopedGridLimit limit(3);
    const int64_t l = limit.value();
    CAPTURE(cfg.name());
    for (const auto& [t, m] : {std::pair{kFloat32, l * 128 + 1}, std::pair{kFloat64, l * 64 + 1}}) {
      CAPTURE(t);
      const double tol = t == kFloat32 ? 1e-5 : 1e-12;
      const Tensor a = gemm_operand({m, 3}, t, Form::row_major, g);
      const Tensor b = gemm_operand({3, 4}, t, Form::row_major, g);
      const Tensor c = ops::matmul(a, b);
      for (const auto& [lo, hi] : {std::pair{int64_t{0}, std::min<int64_t>(m, 130)},
                                   std::pair{std::max<int64_t>(0, m - 300), m}})
        check_close(c.slice(0, lo, hi), matmul_f64(a.slice(0, lo, hi), b), tol, 1e-5);
      const int64_t batch = std::min<int64_t>(2 * l + 1, 70000);
      check_matmul(gemm_operand({batch, 5, 3}, t, Form::row_major, g),
                   gemm_operand({batch, 3, 6}, t, Form::transposed, g));
    }
  }
}

}  // namespace ember::test

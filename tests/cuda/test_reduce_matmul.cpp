// Reductions and GEMM on the emu device against the CPU ops in float64: any dims with keepdim,
// odd row lengths, NaN and ties; matrix products of every size class (1, tile-straddling sizes,
// K = 0), transposed and broadcast operands, batches; and sum(matmul(a, b) + c) end to end.
#include <doctest/doctest.h>

#include "cuda/cuda_test_util.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace ember::test {

TEST_CASE("emu reductions over any dims match the cpu in every thread order") {
  std::mt19937 g(fresh_seed());
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{3, 5}, {1}},         {{3, 5}, {0}},    {{4, 3, 37}, {0, 2}},
      {{2, 300}, {}},        {{7}, {0}},       {{}, {}},
      {{1, 1}, {-1}},        {{2, 0, 3}, {0}}, {{5, 4, 3}, {1}},
      {{2, 3, 4, 5}, {3, 1}}};
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const auto& [shape, dims] : cases) {
      for (Layout l : {Layout::contiguous, Layout::transposed}) {
        for (DType t : {kFloat32, kFloat64}) {
          CAPTURE(shape);
          CAPTURE(Shape(dims));
          const Tensor x = device_operand(shape, t, l, emu(), -2, 2, g);
          const Tensor r = x.cpu().to(kFloat64);
          const double tol = t == kFloat32 ? 1e-5 : 1e-12;
          for (bool keep : {false, true}) {
            check_close(ops::sum(x, dims, keep), ops::sum(r, dims, keep), tol, 1e-6);
            check_close(ops::mean(x, dims, keep), ops::mean(r, dims, keep), tol, 1e-6);
            check_close(ops::var(x, dims, 1, keep), ops::var(r, dims, 1, keep), tol, 1e-6);
            check_close(ops::std(x, dims, 0, keep), ops::std(r, dims, 0, keep), tol, 1e-6);
            if (x.numel() == 0) continue;
            check_close(ops::amax(x, dims, keep), ops::amax(r, dims, keep), 0, 0);
            check_close(ops::amin(x, dims, keep), ops::amin(r, dims, keep), 0, 0);
          }
        }
      }
    }
  }
}

TEST_CASE("emu argmax/argmin give the first extreme, NaN winning, as the cpu") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const Shape& shape : {Shape{4, 70}, Shape{3, 1}, Shape{1000}, Shape{2, 3, 5}}) {
      CAPTURE(shape);
      // Values on a coarse grid: many ties.
      Tensor x = ops::mul(device_operand(shape, kFloat64, Layout::contiguous, emu(), -2, 2, g)
                              .to(kInt64)
                              .to(kFloat32),
                          1.0);
      const Tensor r = x.cpu();
      for (int64_t d = 0; d < x.dim(); ++d) {
        CHECK(ops::argmax(x, d).to_vector<int64_t>() == ops::argmax(r, d).to_vector<int64_t>());
        CHECK(ops::argmin(x, d, true).to_vector<int64_t>() ==
              ops::argmin(r, d, true).to_vector<int64_t>());
      }
      CHECK(ops::argmax(x).item<int64_t>() == ops::argmax(r).item<int64_t>());
      // A NaN in the middle wins.
      Tensor flat = x.reshape({-1}).clone();
      flat.slice(0, flat.numel() / 2, flat.numel() / 2 + 1).fill_(std::nan(""));
      CHECK(ops::argmax(flat).item<int64_t>() == flat.numel() / 2);
      CHECK(ops::argmin(flat).item<int64_t>() == flat.numel() / 2);
      CHECK(std::isnan(ops::amax(flat).item()));
    }
  }
}

TEST_CASE("emu reductions of integer and bool tensors match the cpu") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (DType t : {kInt32, kInt64, kUInt8, kBool}) {
      CAPTURE(t);
      const Tensor x = device_operand({6, 45}, t, Layout::transposed, emu(), -9, 9, g);
      const Tensor r = x.cpu();
      for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, {1}, {}}) {
        CAPTURE(Shape(dims));
        const Tensor s = ops::sum(x, dims);
        CHECK(s.dtype() == kInt64);
        CHECK(s.to_vector<int64_t>() == ops::sum(r, dims).to_vector<int64_t>());
        CHECK(ops::amax(x, dims, true).to_vector<double>() ==
              ops::amax(r, dims, true).to_vector<double>());
        CHECK(ops::amin(x, dims).to_vector<double>() == ops::amin(r, dims).to_vector<double>());
      }
      CHECK(ops::argmax(x, 1).to_vector<int64_t>() == ops::argmax(r, 1).to_vector<int64_t>());
      CHECK(ops::argmin(x, 0).to_vector<int64_t>() == ops::argmin(r, 0).to_vector<int64_t>());
    }
    // Accuracy as a training loop computes it, all on the device.
    const Tensor logits = device_operand({20, 7}, kFloat32, Layout::contiguous, emu(), -1, 1, g);
    const Tensor labels = device_operand({20}, kInt64, Layout::contiguous, emu(), 0, 6, g);
    const Tensor hits = ops::sum(ops::eq(ops::argmax(logits, 1), labels));
    CHECK(hits.device() == emu());
    CHECK(hits.item<int64_t>() ==
          ops::sum(ops::eq(ops::argmax(logits.cpu(), 1), labels.cpu())).item<int64_t>());
  }
}

TEST_CASE("emu tiled GEMM matches the cpu on odd sizes, transposes and batches") {
  std::mt19937 g(fresh_seed());
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {
      {{1, 1}, {1, 1}},    {{1, 7}, {7, 1}},          {{5, 1}, {1, 3}},    {{65, 17}, {17, 66}},
      {{3, 0}, {0, 4}},    {{0, 5}, {5, 3}},          {{70, 33}, {33, 1}}, {{2, 9, 20}, {2, 20, 5}},
      {{1, 4, 3}, {3, 2}}, {{3, 1, 4, 6}, {2, 6, 5}}, {{9}, {9}},          {{9}, {9, 2}},
      {{2, 17, 9}, {9}}};
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const Case& c : cases) {
      for (Layout la : {Layout::contiguous, Layout::transposed}) {
        for (Layout lb : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
          for (DType t : {kFloat32, kFloat64}) {
            CAPTURE(c.a);
            CAPTURE(c.b);
            CAPTURE(std::string(layout_name(la)));
            CAPTURE(std::string(layout_name(lb)));
            const Tensor a = device_operand(c.a, t, la, emu(), -1, 1, g);
            const Tensor b = device_operand(c.b, t, lb, emu(), -1, 1, g);
            const Tensor got = ops::matmul(a, b);
            CHECK(got.device() == emu());
            check_close(got, ops::matmul(a.cpu().to(kFloat64), b.cpu().to(kFloat64)),
                        t == kFloat32 ? 1e-5 : 1e-12, 1e-5);
          }
        }
      }
    }
  }
  const Tensor a = device_operand({4, 3, 5}, kFloat32, Layout::expanded, emu(), -1, 1, g);
  const Tensor b = device_operand({4, 5, 2}, kFloat32, Layout::contiguous, emu(), -1, 1, g);
  check_close(ops::bmm(a, b), ops::bmm(a.cpu().to(kFloat64), b.cpu().to(kFloat64)), 1e-5, 1e-5);
  check_close(ops::mm(a.select(0, 1), b.select(0, 2)),
              ops::mm(a.cpu().select(0, 1).to(kFloat64), b.cpu().select(0, 2).to(kFloat64)), 1e-5,
              1e-5);
}

TEST_CASE("emu end to end: sum(matmul(a, b) + c) equals the cpu result") {
  std::mt19937 g(fresh_seed());
  const Tensor a = random_tensor({37, 29}, kFloat32, -1, 1, g);
  const Tensor b = random_tensor({29, 71}, kFloat32, -1, 1, g);
  const Tensor c = random_tensor({71}, kFloat32, -1, 1, g);
  const double want =
      ops::sum(ops::add(ops::matmul(a.to(kFloat64), b.to(kFloat64)), c.to(kFloat64))).item();
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    const Tensor got = ops::sum(ops::add(ops::matmul(a.to(emu()), b.to(emu())), c.to(emu())));
    CHECK(got.device() == emu());
    CHECK(got.item() == doctest::Approx(want).epsilon(1e-5));
  }
}

TEST_CASE("emu reductions and matmul reject mixed devices") {
  const Tensor a = ones({2, 2}, {kFloat32, emu()}), c = ones({2, 2});
  CHECK_THROWS_AS(ops::matmul(a, c), DeviceError);
  CHECK_THROWS_AS(ops::bmm(c.unsqueeze(0), a.unsqueeze(0)), DeviceError);
  CHECK_THROWS_AS(ops::sum(ones({2}, {kFloat16, emu()})), DTypeError);
  CHECK_THROWS_AS(ops::mean(ones({2}, {kInt32, emu()})), DTypeError);
  CHECK_THROWS_AS(ops::amax(zeros({0}, {kFloat32, emu()})), ValueError);
}

}  // namespace ember::test

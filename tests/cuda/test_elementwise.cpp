// Elementwise kernels on the emu device against the CPU ops in float64: every binary, unary and
// comparison op, scalar forms, where and clamp, on contiguous, transposed, sliced and broadcast
// operands, in every thread order.
#include <doctest/doctest.h>

#include "cuda/cuda_test_util.h"
#include "ops/elementwise.h"

namespace ember::test {

namespace {
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
struct BinaryCase {
  const char* name;
  BinaryFn fn;
  double lo, hi;
};
const BinaryCase kBinary[] = {{"add", &ops::add, -3, 3},
                              {"sub", &ops::sub, -3, 3},
                              {"mul", &ops::mul, -3, 3},
                              {"div", &ops::div, 0.5, 3},
                              {"pow", &ops::pow, 0.5, 2},
                              {"maximum", &ops::maximum, -3, 3},
                              {"minimum", &ops::minimum, -3, 3},
                              {"eq", &ops::eq, -2, 2},
                              {"ne", &ops::ne, -2, 2},
                              {"lt", &ops::lt, -2, 2},
                              {"le", &ops::le, -2, 2},
                              {"gt", &ops::gt, -2, 2},
                              {"ge", &ops::ge, -2, 2}};

// Shapes: odd sizes, broadcasting both ways, a 0-D operand, an empty tensor, a size not a
// multiple of 4 (the float4 path's tail).
const Shape kShapesA[] = {{3, 5}, {4, 1, 7}, {1}, {}, {0, 3}, {2, 3, 4, 5}, {1031}};
const Shape kShapesB[] = {{3, 5}, {3, 1}, {6}, {2, 2}, {1, 3}, {3, 1, 5}, {1031}};
}  // namespace

TEST_CASE("emu elementwise binary ops match the cpu in every thread order and layout") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const BinaryCase& op : kBinary) {
      CAPTURE(std::string(op.name));
      for (size_t s = 0; s < std::size(kShapesA); ++s) {
        for (Layout la : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
          const DType t = s % 2 ? kFloat64 : kFloat32;
          CAPTURE(kShapesA[s]);
          CAPTURE(std::string(layout_name(la)));
          // Round operands to 0.5 for comparisons, so that equal values occur.
          Tensor a = device_operand(kShapesA[s], t, la, emu(), op.lo, op.hi, g);
          Tensor b = device_operand(kShapesB[s], t, Layout::expanded, emu(), op.lo, op.hi, g);
          if (op.lo == -2) a = ops::mul(ops::add(ops::mul(a, 2.0).to(kInt64).to(t), 0.0), 0.5);
          if (op.lo == -2) b = ops::mul(b.to(kInt64).to(t), 1.0);
          const Tensor got = op.fn(a, b);
          CHECK(got.device() == emu());
          const Tensor want = op.fn(a.cpu().to(kFloat64), b.cpu().to(kFloat64));
          check_close(got, want, t == kFloat32 ? 1e-5 : 1e-12, 1e-6);
        }
      }
    }
  }
}

TEST_CASE("emu elementwise unary ops, clamp and scalar forms match the cpu") {
  std::mt19937 g(fresh_seed());
  using UnaryFn = Tensor (*)(const Tensor&);
  const std::pair<const char*, UnaryFn> unary[] = {{"neg", &ops::neg},   {"abs", &ops::abs},
                                                   {"exp", &ops::exp},   {"log", &ops::log},
                                                   {"sqrt", &ops::sqrt}, {"rsqrt", &ops::rsqrt}};
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (const Shape& shape : {Shape{5, 7}, Shape{1}, Shape{0}, Shape{2, 3, 9}, Shape{1030}}) {
      for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
        for (DType t : {kFloat32, kFloat64}) {
          CAPTURE(shape);
          CAPTURE(std::string(layout_name(l)));
          const double tol = t == kFloat32 ? 1e-5 : 1e-12;
          const Tensor x = device_operand(shape, t, l, emu(), 0.1, 3, g);
          const Tensor ref = x.cpu().to(kFloat64);
          for (const auto& [name, fn] : unary) {
            CAPTURE(std::string(name));
            check_close(fn(x), fn(ref), tol, 1e-7);
            check_close(fn(ops::neg(x)), fn(ops::neg(ref)), tol, 1e-7);  // NaN from log/sqrt
          }
          check_close(ops::clamp(x, 0.5, 2.0), ops::clamp(ref, 0.5, 2.0), 0, 0);
          check_close(ops::clamp(x, 2.0, 0.5), ops::clamp(ref, 2.0, 0.5), 0, 0);
          check_close(ops::add(x, 1.5), ops::add(ref, 1.5), tol, 1e-7);
          check_close(ops::mul(x, -3.0), ops::mul(ref, -3.0), tol, 1e-7);
          check_close(ops::pow(x, 2.5), ops::pow(ref, 2.5), tol, 1e-7);
        }
      }
    }
  }
}

TEST_CASE("emu where, integer promotion and NaN propagation match the cpu") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    const Tensor a = device_operand({4, 6}, kFloat32, Layout::transposed, emu(), -2, 2, g);
    const Tensor b = device_operand({6}, kFloat64, Layout::contiguous, emu(), -2, 2, g);
    const Tensor c =
        ops::gt(a, device_operand({4, 1}, kFloat32, Layout::contiguous, emu(), -2, 2, g));
    const Tensor got = ops::where(c, a, b);
    CHECK(got.dtype() == kFloat64);
    check_close(got, ops::where(c.cpu(), a.cpu().to(kFloat64), b.cpu()), 0, 0);
    check_close(ops::where(c, a, b.slice(0, 0, 1)),
                ops::where(c.cpu(), a.cpu(), b.cpu().slice(0, 0, 1)), 0, 0);
    // An integer operand promotes on the device.
    const Tensor i = from_vector<int64_t>({1, -2, 3, 4, 5, 6}).to(emu());
    check_close(ops::add(b, i), ops::add(b.cpu(), i.cpu()), 1e-12, 0);
    const Tensor nan = full({6}, std::nan(""), {kFloat64, emu()});
    check_close(ops::maximum(b, nan), ops::maximum(b.cpu(), nan.cpu()), 0, 0);
    check_close(ops::clamp(nan, 0, 1), nan.cpu(), 0, 0);
  }
}

TEST_CASE("emu elementwise ops reject mixed devices and dtypes without GPU kernels") {
  const Tensor a = ones({3}, {kFloat32, emu()}), c = ones({3});
  CHECK_THROWS_AS(ops::add(a, c), DeviceError);
  try {
    (void)ops::mul(c, a);
    FAIL("no DeviceError");
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("cpu") != std::string::npos);
    CHECK(msg.find(emu().str()) != std::string::npos);
  }
  CHECK_THROWS_AS(ops::where(ops::gt(a, a), a, c), DeviceError);
  const Tensor u = ones({3}, {kUInt8, emu()});
  CHECK_THROWS_AS(ops::add(u, u), DTypeError);
  CHECK_THROWS_AS(ops::maximum(ops::gt(a, a), ops::gt(a, a)), DTypeError);
}

TEST_CASE("emu integer elementwise ops match the cpu") {
  std::mt19937 g(fresh_seed());
  for (const auto& cfg : emu_orders()) {
    simt_test::ScopedOptions scoped(cfg);
    CAPTURE(cfg.name());
    for (DType t : {kInt32, kInt64}) {
      CAPTURE(t);
      for (Layout l : {Layout::contiguous, Layout::transposed, Layout::sliced}) {
        CAPTURE(std::string(layout_name(l)));
        const Tensor a = device_operand({5, 9}, t, l, emu(), -4, 4, g);
        const Tensor b = device_operand({9}, t, Layout::contiguous, emu(), -3, 3, g);
        const Tensor ra = a.cpu(), rb = b.cpu();
        for (const BinaryCase& op : kBinary) {
          CAPTURE(std::string(op.name));
          const Tensor got = op.fn(a, b);
          CHECK(got.dtype() == op.fn(ra, rb).dtype());
          check_close(got, op.fn(ra, rb).to(kFloat64), 0, 0);  // div by 0: inf and NaN
        }
        CHECK(ops::neg(a).to_vector<int64_t>() == ops::neg(ra).to_vector<int64_t>());
        CHECK(ops::abs(a).to_vector<int64_t>() == ops::abs(ra).to_vector<int64_t>());
        CHECK(ops::clamp(a, -1.5, 2.5).to_vector<int64_t>() ==
              ops::clamp(ra, -1.5, 2.5).to_vector<int64_t>());
        CHECK(ops::pow(a, 3.0).to_vector<int64_t>() == ops::pow(ra, 3.0).to_vector<int64_t>());
        CHECK(ops::mul(a, 0.5).to_vector<double>() == ops::mul(ra, 0.5).to_vector<double>());
        CHECK(ops::where(ops::gt(a, b), a, b).to_vector<int64_t>() ==
              ops::where(ops::gt(ra, rb), ra, rb).to_vector<int64_t>());
        check_close(ops::sqrt(ops::abs(a)), ops::sqrt(ops::abs(ra)).to(kFloat64), 1e-6, 0);
      }
    }
  }
}

}  // namespace ember::test

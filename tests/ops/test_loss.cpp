// Losses against float64 references with textbook formulas, and every bad input of the NN ops
// raising a typed error that names the op.
#include <doctest/doctest.h>

#include <cmath>

#include "autograd/activation.h"
#include "autograd/batch_norm.h"
#include "autograd/dropout.h"
#include "autograd/linear.h"
#include "autograd/loss.h"
#include "autograd/softmax.h"
#include "op_test_util.h"
#include "ops/dropout.h"

using namespace ember;
using namespace ember::test;

namespace {

// Cross entropy (PyTorch 1.13 semantics) on logits [N, C, S] flattened, targets [N * S].
std::vector<double> ce_reference(const std::vector<double>& x, const std::vector<int64_t>& tg,
                                 int64_t n, int64_t c, int64_t s, int64_t ignore, double eps,
                                 Reduction r, bool logits) {
  std::vector<double> per(n * s, 0.0);
  double total = 0, count = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < s; ++j) {
      const int64_t t = tg[i * s + j];
      if (t == ignore) continue;
      std::vector<double> lp(c);
      double mx = -INFINITY, z = 0;
      for (int64_t k = 0; k < c; ++k) mx = std::max(mx, x[(i * c + k) * s + j]);
      for (int64_t k = 0; k < c; ++k) z += std::exp(x[(i * c + k) * s + j] - mx);
      double sum_lp = 0;
      for (int64_t k = 0; k < c; ++k) {
        lp[k] = logits ? x[(i * c + k) * s + j] - mx - std::log(z) : x[(i * c + k) * s + j];
        sum_lp += lp[k];
      }
      per[i * s + j] = (1 - eps) * -lp[t] + eps / c * -sum_lp;
      total += per[i * s + j];
      count += 1;
    }
  if (r == Reduction::None) return per;
  return {r == Reduction::Sum ? total : total / count};
}

const Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

}  // namespace

TEST_CASE("cross_entropy and nll_loss match float64 references") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (DType t : {kFloat32, kFloat64})
    for (const Shape& shape : {Shape{4, 3}, Shape{1, 5}, Shape{2, 3, 5, 7}, Shape{3, 4, 2}})
      for (Reduction r : kReductions)
        for (double eps : {0.0, 0.2})
          for (int64_t ignore : {int64_t{-100}, int64_t{1}}) {
            CAPTURE(t);
            CAPTURE(shape);
            CAPTURE(static_cast<int>(r));
            CAPTURE(eps);
            CAPTURE(ignore);
            const int64_t n = shape[0], c = shape[1];
            const int64_t s = checked_numel(shape) / (n * c);
            Shape ts = shape;
            ts.erase(ts.begin() + 1);
            std::vector<int64_t> tv(n * s);
            std::uniform_int_distribution<int64_t> pick(0, c - 1);
            for (auto& v : tv) v = pick(g);
            tv[0] = 0;  // at least one position counted
            if (ignore == 1 && tv.size() > 1) tv[1] = 1;
            if (ignore == -100 && tv.size() > 2) tv[2] = -100;
            Tensor target = from_vector(tv, ts);
            Tensor x = random_operand(shape, t, Layout::transposed, -3, 3, g);
            const std::vector<double> xv = x.to_vector<double>();
            check_values(cross_entropy(x, target, ignore, r, eps),
                         ce_reference(xv, tv, n, c, s, ignore, eps, r, true), t);
            if (eps == 0)
              check_values(nll_loss(x, target, ignore, r),
                           ce_reference(xv, tv, n, c, s, ignore, 0, r, false), t);
          }
}

TEST_CASE("cross_entropy with every target ignored: mean is NaN, sum is 0") {
  Tensor x = ones({2, 3}, kFloat64);
  Tensor target = from_vector<int64_t>({-100, -100});
  CHECK(std::isnan(cross_entropy(x, target).item()));
  CHECK(cross_entropy(x, target, -100, Reduction::Sum).item() == 0.0);
}

TEST_CASE("cross_entropy by hand") {
  // Logits [0, ln 3] for class 1: p = [1/4, 3/4]; loss = -ln(3/4).
  Tensor x = from_vector<double>({0.0, std::log(3.0)}, {1, 2});
  Tensor t = from_vector<int64_t>({1}, {1});
  CHECK(cross_entropy(x, t).item() == doctest::Approx(-std::log(0.75)));
  // Smoothing 0.5: 0.5 * -ln(3/4) + 0.5 / 2 * -(ln(1/4) + ln(3/4)).
  const double want = 0.5 * -std::log(0.75) + 0.25 * -(std::log(0.25) + std::log(0.75));
  CHECK(cross_entropy(x, t, -100, Reduction::Mean, 0.5).item() == doctest::Approx(want));
}

TEST_CASE("mse_loss matches a float64 reference") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  for (DType t : {kFloat32, kFloat64})
    for (const Shape& shape : {Shape{5, 7}, Shape{1}, Shape{0, 3}})
      for (Reduction r : kReductions) {
        CAPTURE(t);
        CAPTURE(shape);
        Tensor x = random_operand(shape, t, Layout::transposed, -2, 2, g);
        Tensor y = random_operand(shape, t, Layout::sliced, -2, 2, g);
        const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
        std::vector<double> per(xv.size());
        double total = 0;
        for (size_t i = 0; i < xv.size(); ++i) total += per[i] = std::pow(xv[i] - yv[i], 2);
        Tensor got = mse_loss(x, y, r);
        if (r == Reduction::None)
          check_values(got, per, t);
        else if (r == Reduction::Sum)
          check_values(got, {total}, t);
        else if (!xv.empty())
          check_values(got, {total / xv.size()}, t);
        else
          CHECK(std::isnan(got.item()));
      }
}

TEST_CASE("nn ops reject bad input with typed errors naming the op") {
  auto expect = [](auto&& f, auto tag, std::initializer_list<std::string> parts) {
    using E = decltype(tag);
    try {
      f();
      FAIL("no exception");
    } catch (const E& e) {
      check_message(e.what(), parts);
    }
  };
  Tensor x4 = zeros({2, 3, 4, 5});
  Tensor c3 = ones({3}), c4 = ones({4});
  // batch_norm
  expect([&] { batch_norm(zeros({3}), c3, c3, c3, c3, true); }, ShapeError{""},
         {"batch_norm", "[N, C, ...]", "[3]"});
  expect([&] { batch_norm(x4, c4, c3, c3, c3, true); }, ShapeError{""},
         {"batch_norm", "weight", "[3]", "[4]"});
  expect([&] { batch_norm(x4, c3, c4, c3, c3, true); }, ShapeError{""}, {"bias", "[4]"});
  expect([&] { batch_norm(x4, c3, c3, c4, c3, true); }, ShapeError{""}, {"running_mean", "[4]"});
  expect([&] { batch_norm(x4, c3, c3, c3, c4, false); }, ShapeError{""}, {"running_var", "[4]"});
  expect([&] { batch_norm(x4, c3.to(kFloat64), c3, c3, c3, true); }, DTypeError{""},
         {"batch_norm", "float32", "float64"});
  expect([&] { batch_norm(x4.to(kInt64), Tensor(), Tensor(), c3, c3, true); }, DTypeError{""},
         {"batch_norm", "int64"});
  expect([&] { batch_norm(x4, Tensor(), Tensor(), Tensor(), Tensor(), false); }, ValueError{""},
         {"batch_norm", "running_mean"});
  expect(
      [&] {
        batch_norm(zeros({1, 3}), Tensor(), Tensor(), c3, c3, true);
      },
      ValueError{""}, {"batch_norm", "more than 1 value per channel"});
  Tensor emu = fake_device_tensor({3}, kFloat32, Device(DeviceType::EMU, 0));
  expect([&] { batch_norm(x4, emu, Tensor(), c3, c3, true); }, DeviceError{""},
         {"batch_norm", "cpu", "emu"});
  // activations, softmax, dropout
  expect([&] { relu(zeros({2}, kInt64)); }, DTypeError{""}, {"relu", "int64"});
  expect([&] { gelu(zeros({2}), "exact"); }, ValueError{""}, {"gelu", "exact"});
  expect([&] { softmax(zeros({2, 3}), 2); }, IndexError{""}, {"softmax"});
  expect([&] { log_softmax(zeros({2}, kInt32), 0); }, DTypeError{""}, {"log_softmax", "int32"});
  expect([&] { dropout(zeros({2}), 1.5); }, ValueError{""}, {"dropout", "1.5"});
  expect([&] { dropout(zeros({2}), -0.1); }, ValueError{""}, {"dropout", "-0.1"});
  expect(
      [&] {
        ops::dropout_backward(zeros({2}),
                              fake_device_tensor({2}, kBool, Device(DeviceType::EMU, 0)), 0.5);
      },
      DeviceError{""}, {"dropout_backward", "cpu", "emu"});
  // linear
  expect(
      [&] {
        linear(zeros({2, 5}), zeros({3, 4}));
      },
      ShapeError{""}, {"linear", "5 features", "[3, 4]"});
  expect(
      [&] {
        linear(zeros({2, 4}), zeros({3, 4}), zeros({2}));
      },
      ShapeError{""}, {"linear", "bias", "[3]", "[2]"});
  expect([&] { linear(zeros({2, 4}), zeros({4})); }, ShapeError{""}, {"linear", "[out, in]"});
  expect(
      [&] {
        linear(zeros({2, 4}), zeros({3, 4}, kFloat64));
      },
      DTypeError{""}, {"linear", "float32", "float64"});
  // losses
  Tensor logits = zeros({2, 5, 3});
  Tensor target = from_vector<int64_t>({0, 1, 2, 3, 4, 0}, {2, 3});
  expect([&] { cross_entropy(zeros({5}), from_vector<int64_t>({0})); }, ShapeError{""},
         {"cross_entropy", "[N, C]", "[5]"});
  expect([&] { cross_entropy(logits, target.to(kInt32)); }, DTypeError{""},
         {"cross_entropy", "int64", "int32"});
  expect(
      [&] {
        cross_entropy(logits, zeros({2, 4}, kInt64));
      },
      ShapeError{""}, {"cross_entropy", "[2, 3]", "[2, 4]"});
  Tensor bad = from_vector<int64_t>({0, 1, 2, 3, 7, 0}, {2, 3});
  expect([&] { cross_entropy(logits, bad); }, IndexError{""},
         {"cross_entropy", "target 7", "[1, 1]", "5 classes"});
  expect(
      [&] {
        nll_loss(logits, from_vector<int64_t>({0, -1, 2, 3, 4, 0}, {2, 3}));
      },
      IndexError{""}, {"nll_loss", "target -1", "[0, 1]", "5 classes"});
  expect([&] { cross_entropy(logits, target, -100, Reduction::Mean, 1.5); }, ValueError{""},
         {"cross_entropy", "label_smoothing", "1.5"});
  expect(
      [&] {
        mse_loss(zeros({2, 3}), zeros({3, 2}));
      },
      ShapeError{""}, {"mse_loss", "[2, 3]", "[3, 2]"});
  expect([&] { mse_loss(zeros({2}), zeros({2}, kFloat64)); }, DTypeError{""},
         {"mse_loss", "float32", "float64"});
  expect(
      [&] { mse_loss(zeros({2}), fake_device_tensor({2}, kFloat32, Device(DeviceType::EMU, 0))); },
      DeviceError{""}, {"mse_loss", "emu"});
}

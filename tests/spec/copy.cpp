// Copies and casts on every target (tests/spec/spec.h): every pair of dtypes, from every layout,
// into contiguous and strided destinations, and between the host and the target through strided
// views; the expected values are the source's converted in the test (op_test_util.h's as_stored:
// floats truncate toward zero into integers, which wrap like a C++ cast; bool is v != 0).
#include <doctest/doctest.h>

#include "spec/spec.h"

namespace ember::test {
namespace {

std::vector<double> converted(const std::vector<double>& v, DType to) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = as_stored(v[i], to);
  return out;
}

}  // namespace

TEST_CASE("copies and casts between layouts and dtypes on every target") {
  const unsigned seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937 g(seed);
  const DType dtypes[] = {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool};
  for_each_target([&](Device dev) {
    for (DType from : dtypes) {
      for (DType to : dtypes) {
        for (Layout l :
             {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::expanded}) {
          CAPTURE(from);
          CAPTURE(to);
          CAPTURE(l);
          // Values in [0, 200]: every dtype holds them, so the conversion rules, not overflow,
          // decide each result.
          const Tensor x = random_operand({3, 5, 4}, from, l, 0, 200, g, 0.0, dev);
          const std::vector<double> want = converted(x.to_vector<double>(), to);
          check_result(x.to(to), dev, to, {3, 5, 4}, want);
          // Into a strided destination on the target.
          Tensor dst = zeros({4, 5, 3}, {to, dev}).permute({2, 1, 0});
          dst.copy_(x);
          check_result(dst, dev, to, {3, 5, 4}, want);
        }
      }
    }
    // Host <-> target copies into and out of strided views.
    const Tensor h = random_tensor({6, 7}, kFloat64, -1, 1, g);
    const std::vector<double> hv = h.to_vector<double>();
    Tensor d = zeros({7, 6}, {kFloat32, dev}).t();
    d.copy_(h);
    check_result(d, dev, kFloat32, {6, 7}, converted(hv, kFloat32));
    Tensor back = zeros({6, 7}, kFloat64);
    back.slice(1, 0, 7, 2).copy_(d.slice(1, 0, 7, 2));
    const std::vector<double> bv = back.to_vector<double>();
    for (size_t i = 0; i < bv.size(); ++i) {
      CAPTURE(i);
      CHECK(bv[i] == (i % 7 % 2 == 0 ? as_stored(hv[i], kFloat32) : 0.0));
    }
    check_result(d.contiguous(), dev, kFloat32, {6, 7}, converted(hv, kFloat32));
    CHECK(zeros({0, 3}, {kFloat32, dev}).to(kInt64).numel() == 0);
  });
}

TEST_CASE("casts of negative and fractional values on every target") {
  for_each_target([&](Device dev) {
    const Tensor x = from_vector<double>({-2.75, -0.5, 0.0, 0.5, 2.75, 127.9}).to(dev);
    check_result(x.to(kInt32), dev, kInt32, {6}, {-2, 0, 0, 0, 2, 127});
    check_result(x.to(kInt64), dev, kInt64, {6}, {-2, 0, 0, 0, 2, 127});
    check_result(x.to(kBool), dev, kBool, {6}, {1, 1, 0, 1, 1, 1});
    check_result(x.to(kFloat32).to(kInt64), dev, kInt64, {6}, {-2, 0, 0, 0, 2, 127});
    const Tensor i = from_vector<int64_t>({-3, 0, 7, 255, 256}).to(dev);
    check_result(i.to(kUInt8), dev, kUInt8, {5}, {253, 0, 7, 255, 0});
    check_result(i.to(kFloat32), dev, kFloat32, {5}, {-3, 0, 7, 255, 256});
  });
}

}  // namespace ember::test

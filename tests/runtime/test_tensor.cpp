// Tensor: factories, views sharing storage, copies, casts, item, printing and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include "runtime/tensor.h"

using namespace ember;

namespace {
// Reads element `idx` of t through its strides, independently of the view code under test.
double at(const Tensor& t, std::vector<int64_t> idx) {
  Tensor base = t;
  int64_t off = t.offset();
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
  Tensor flat = t.as_strided({1}, {1}, off);
  return flat.item();
}
Tensor iota(const Shape& s, DType t = kFloat64) {
  std::vector<double> v(static_cast<size_t>(checked_numel(s)));
  std::iota(v.begin(), v.end(), 0.0);
  return from_vector(v, s).to(t);
}
}  // namespace

TEST_CASE("fill_ stores the value rounded to the dtype in every element, -0.0 included") {
  // A contiguous cpu tensor is filled with the value's bytes; the expected values are the
  // dtypes' own roundings of 1/3, written out.
  const int64_t n = 1000;  // long enough for the vector loops
  auto each = [&](const Tensor& t, double want) {
    for (double v : t.to_vector<double>()) CHECK(v == want);
  };
  each(full({n}, 1.0 / 3, kFloat32), static_cast<double>(1.0f / 3));
  each(full({n}, 1.0 / 3, kFloat16), 0.333251953125);
  each(full({n}, 1.0 / 3, kBFloat16), 0.333984375);
  each(full({n}, 1.0 / 3, kFloat64), 1.0 / 3);
  each(full({n}, -7.9, kInt32), -7);
  each(full({n}, 9007199254740993.0, kInt64), 9007199254740992.0);
  each(full({n}, 200, kUInt8), 200);
  each(full({n}, 2.0, kBool), 1);
  for (DType t : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    CAPTURE(t);
    Tensor z = ones({n}, t);
    z.fill_(-0.0);
    for (double v : z.to_vector<double>()) CHECK((v == 0.0 && std::signbit(v)));
    z.fill_(0.0);
    for (double v : z.to_vector<double>()) CHECK((v == 0.0 && !std::signbit(v)));
  }
  Tensor m = zeros({4, 6});  // a strided view takes the copy engine
  m.select(1, 2).fill_(5.0);
  const std::vector<float> mv = m.to_vector<float>();
  for (int64_t i = 0; i < 24; ++i) CHECK(mv[i] == (i % 6 == 2 ? 5.0f : 0.0f));
}

TEST_CASE("factories") {
  Tensor z = zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.strides() == Shape{3, 1});
  CHECK(z.dtype() == kFloat32);
  CHECK(z.device() == kCPU);
  CHECK(z.numel() == 6);
  for (float v : z.to_vector<float>()) CHECK(v == 0.0f);
  for (double v : ones({4}, kFloat64).to_vector<double>()) CHECK(v == 1.0);
  for (int64_t v : full({3}, 7.9, kInt64).to_vector<int64_t>()) CHECK(v == 7);
  CHECK(arange(5).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(1.0, 2.0, 0.25, kFloat64).to_vector<double>() ==
        std::vector<double>{1.0, 1.25, 1.5, 1.75});
  CHECK(arange(3.0, 0.0, -1.0, kInt32).to_vector<int32_t>() == std::vector<int32_t>{3, 2, 1});
  CHECK(arange(2.0, 1.0).numel() == 0);
  CHECK_THROWS_AS(arange(0.0, 1.0, 0.0), ValueError);
  Tensor s = full({}, 2.5);
  CHECK(s.dim() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.item() == 2.5);
  Tensor e = empty({0, 5});
  CHECK(e.numel() == 0);
  CHECK(e.data_ptr() == nullptr);
  CHECK(reinterpret_cast<uintptr_t>(empty({3}).data_ptr()) % 64 == 0);
}

TEST_CASE("bad sizes are errors, not undefined behaviour") {
  CHECK_THROWS_AS(empty({2, -1}), ShapeError);
  CHECK_THROWS_AS(empty({int64_t{1} << 40, int64_t{1} << 40}), ShapeError);
  CHECK_THROWS_AS(empty({int64_t{1} << 62, 4}, kFloat64), ShapeError);  // bytes overflow
  try {
    empty({3, -2});
  } catch (const ShapeError& e) {
    CHECK(std::string(e.what()).find("[3, -2]") != std::string::npos);
  }
  Tensor t = zeros({2, 3});
  CHECK_THROWS_AS(t.size(2), IndexError);
  CHECK_THROWS_AS(t.transpose(0, 5), IndexError);
  CHECK_THROWS_AS(t.select(1, 3), IndexError);
  CHECK_THROWS_AS(t.permute({0, 0}), ShapeError);
  CHECK_THROWS_AS(t.permute({1}), ShapeError);
  CHECK_THROWS_AS(Tensor().numel(), ValueError);
}

TEST_CASE("views share storage and read the right elements") {
  Tensor t = iota({2, 3, 4});
  Tensor p = t.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.storage() == t.storage());
  CHECK_FALSE(p.is_contiguous());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) CHECK(at(p, {i, j, k}) == j * 12 + k * 4 + i);

  Tensor tr = t.transpose(0, 2);
  CHECK(tr.shape() == Shape{4, 3, 2});
  CHECK(at(tr, {3, 1, 1}) == 1 * 12 + 1 * 4 + 3);

  Tensor sl = t.slice(2, 1, 4, 2);  // columns 1, 3
  CHECK(sl.shape() == Shape{2, 3, 2});
  CHECK(at(sl, {1, 2, 1}) == 12 + 8 + 3);
  CHECK(t.slice(2, -3, 100).shape() == Shape{2, 3, 3});
  CHECK(t.slice(0, 5, 9).numel() == 0);

  Tensor se = t.select(1, -1);
  CHECK(se.shape() == Shape{2, 4});
  CHECK(at(se, {1, 2}) == 12 + 8 + 2);

  Tensor row = iota({1, 3});
  Tensor ex = row.expand({4, 3});
  CHECK(ex.strides()[0] == 0);
  CHECK(at(ex, {3, 2}) == 2);
  CHECK(row.expand({2, -1, 3}).shape() == Shape{2, 1, 3});
  CHECK_THROWS_AS(row.expand({4, 2}), ShapeError);

  Tensor u = t.unsqueeze(1);
  CHECK(u.shape() == Shape{2, 1, 3, 4});
  CHECK(u.squeeze(1).shape() == Shape{2, 3, 4});
  CHECK(u.unsqueeze(-1).shape() == Shape{2, 1, 3, 4, 1});
  CHECK(u.unsqueeze(-1).squeeze().shape() == Shape{2, 3, 4});
  CHECK(t.flatten(1).shape() == Shape{2, 12});
  CHECK(t.flatten().shape() == Shape{24});

  // Writing through a view changes the base and bumps the shared version.
  uint32_t v0 = t.version();
  Tensor view = t.select(0, 1).select(0, 2);
  view.fill_(-1.0);
  CHECK(t.version() > v0);
  CHECK(at(t, {1, 2, 0}) == -1);
  CHECK(at(t, {1, 2, 3}) == -1);
  CHECK(at(t, {1, 1, 3}) == 19);
}

TEST_CASE("view, reshape and contiguous") {
  Tensor t = iota({4, 6});
  Tensor v = t.view({2, -1, 3});
  CHECK(v.shape() == Shape{2, 4, 3});
  CHECK(v.storage() == t.storage());
  CHECK_THROWS_AS(t.view({5, -1}), ShapeError);
  CHECK_THROWS_AS(t.view({-1, -1}), ShapeError);
  Tensor tt = t.t();
  try {
    tt.view({24});
    FAIL("expected ShapeError");
  } catch (const ShapeError& e) {
    CHECK(std::string(e.what()).find("reshape") != std::string::npos);
  }
  Tensor r = tt.reshape({24});
  CHECK(r.is_contiguous());
  CHECK(r.storage() != t.storage());
  std::vector<double> rv = r.to_vector<double>();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 4; ++j) CHECK(rv[i * 4 + j] == j * 6 + i);
  // A split of a non-contiguous dim that keeps its chunk is still a view.
  Tensor cols = t.slice(1, 0, 6, 2);  // [4, 3] with strides [6, 2]
  Tensor cv = cols.view({2, 2, 3});
  CHECK(cv.storage() == t.storage());
  CHECK(at(cv, {1, 1, 2}) == 3 * 6 + 4);
  Tensor c = cols.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.to_vector<double>() ==
        std::vector<double>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22});
  CHECK(t.contiguous().is_same(t));
  Tensor cl = t.clone();
  CHECK_FALSE(cl.storage() == t.storage());
}

TEST_CASE("dtype casts") {
  Tensor f = from_vector<double>({-1.5, 0.0, 2.7, 255.0});
  CHECK(f.to(kInt32).to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 2, 255});
  CHECK(f.to(kBool).to_vector<bool>() == std::vector<bool>{true, false, true, true});
  CHECK(f.to(kFloat16).to_vector<double>() == std::vector<double>{-1.5, 0.0, 2.69921875, 255.0});
  CHECK(f.to(kBFloat16).to_vector<double>() == std::vector<double>{-1.5, 0.0, 2.703125, 255.0});
  // A non-contiguous cast keeps logical order.
  Tensor m = iota({3, 2}).t().to(kInt64);
  CHECK(m.to_vector<int64_t>() == std::vector<int64_t>{0, 2, 4, 1, 3, 5});
  Tensor dst = zeros({2, 3}, kFloat32);
  dst.copy_(from_vector<int32_t>({1, 2, 3}));  // broadcast copy
  CHECK(dst.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
}

TEST_CASE("item") {
  CHECK(from_vector<int64_t>({42}).item<int64_t>() == 42);
  CHECK(zeros({1, 1, 1}).item() == 0.0);
  try {
    zeros({2, 3}).item();
    FAIL("expected ValueError");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).find("[2, 3]") != std::string::npos);
    CHECK(std::string(e.what()).find("6 elements") != std::string::npos);
  }
}

TEST_CASE("from_blob shares memory") {
  std::vector<float> buf = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(buf.data(), {2, 3}, {3, 1}, kFloat32, nullptr);
  buf[4] = 50;
  CHECK(t.to_vector<float>()[4] == 50);
  t.select(0, 0).fill_(0);
  CHECK(buf[0] == 0);
  CHECK_THROWS_AS(t.as_strided({7}, {1}, 0), ShapeError);
}

TEST_CASE("printing looks like PyTorch's") {
  CHECK(from_vector<float>({1, 2, 3}).to_string() == "tensor([1., 2., 3.])");
  CHECK(from_vector<float>({1.5f, -2.25f}).to_string() == "tensor([ 1.5000, -2.2500])");
  CHECK(from_vector<int64_t>({1, 20, 3}, {3}).to_string() == "tensor([ 1, 20,  3])");
  CHECK(from_vector<int32_t>({1, 2}).to_string() == "tensor([1, 2], dtype=ember.int32)");
  CHECK(from_vector<bool>({true, false}).to_string() == "tensor([ True, False])");
  CHECK(from_vector<double>({0.5}).to_string() == "tensor([0.5000], dtype=ember.float64)");
  CHECK(full({}, 3.0).to_string() == "tensor(3.)");
  CHECK(zeros({0, 3}).to_string() == "tensor([], size=(0, 3))");
  CHECK(iota({2, 2}, kFloat32).to_string() == "tensor([[0., 1.],\n        [2., 3.]])");
  CHECK(from_vector<float>({1e-5f, 1.0f}).to_string() == "tensor([1.0000e-05, 1.0000e+00])");
  std::string big = arange(2000).to_string();
  CHECK(big == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  std::string big2 = arange(0.0, 2000.0, 1.0).reshape({40, 50}).to_string();
  CHECK(big2.find("...") != std::string::npos);
  CHECK(big2.size() < 400);
}

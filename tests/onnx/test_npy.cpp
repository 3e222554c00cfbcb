// .npy files (nn/npy.h): round trips of every dtype and rank, NumPy's Fortran order, and the
// malformed files a reader must refuse.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "nn/npy.h"
#include "runtime/error.h"

using namespace ember;

namespace {

// The bytes NumPy writes for a header text (version 1.0, padded to 64 bytes) and data.
std::string npy(std::string header, const std::string& data) {
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

}  // namespace

TEST_CASE("npy: round trips keep dtype, shape and values") {
  const std::string path = "/tmp/ember_test_npy.npy";
  for (const Tensor& t : {from_vector<float>({1.5f, -2, 3, 4, 5, 6}, {2, 3}),
                          from_vector<int64_t>({7, -8, 9}), from_vector<bool>({true, false}),
                          full({}, 4.0, kFloat64), zeros({0, 3}, kInt32)}) {
    save_npy(path, t);
    const Tensor r = load_npy(path);
    CHECK(r.dtype() == t.dtype());
    CHECK(r.shape() == t.shape());
    CHECK(r.to(kFloat64).to_vector<double>() == t.to(kFloat64).to_vector<double>());
  }
  std::remove(path.c_str());
}

TEST_CASE("npy: NumPy's own header forms, Fortran order included") {
  const float v[6] = {0, 1, 2, 3, 4, 5};
  const std::string data(reinterpret_cast<const char*>(v), 24);
  const std::string r = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data);
  const Tensor c = deserialize_npy(r.data(), r.size(), "c");
  CHECK(c.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  const std::string f = npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data);
  const Tensor t = deserialize_npy(f.data(), f.size(), "f");
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.to_vector<float>() == std::vector<float>{0, 2, 4, 1, 3, 5});  // column-major storage
}

TEST_CASE("npy: malformed files are FormatErrors, unknown dtypes DTypeErrors") {
  auto load = [](const std::string& b) { return deserialize_npy(b.data(), b.size(), "test.npy"); };
  const std::string four(4, '\0');
  CHECK_THROWS_AS(load("not numpy at all"), FormatError);
  CHECK_THROWS_AS(load(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", four)),
                  FormatError);  // 4 bytes for 8
  CHECK_THROWS_AS(load(npy("{'descr': '<f4', 'fortran_order': False, }", four)), FormatError);
  CHECK_THROWS_AS(load(npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", four)), FormatError);
  CHECK_THROWS_AS(load(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", four)), FormatError);
  CHECK_THROWS_AS(load(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", four)), DTypeError);
  CHECK_THROWS_AS(load(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", four)), DTypeError);
  std::string truncated = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", four);
  truncated[8] = '\xff';  // a header length past the end
  CHECK_THROWS_AS(load(truncated), FormatError);
  CHECK_THROWS_AS(load_npy("/nonexistent.npy"), IOError);
}

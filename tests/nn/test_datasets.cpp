// The bundled digits, and the MNIST (IDX) and CIFAR-10 readers on small synthetic files,
// each corruption raising FormatError and each missing file IOError.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "nn/datasets.h"
#include "nn_test_util.h"

using namespace ember;
using ember_test::check_throws_with;
using ember_test::read_bytes;
using ember_test::TempDir;
using ember_test::write_bytes;

namespace {

std::string be32(uint32_t v) {
  return {char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff), char(v & 0xff)};
}

// Sets an environment variable for one scope.
struct EnvVar {
  EnvVar(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
  ~EnvVar() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// A copy of the bundled digits file with `edit` applied, loaded from a scratch directory.
void expect_bad_digits(const std::function<void(std::string&)>& edit, const std::string& problem) {
  std::string bytes = read_bytes(default_data_dir() + "/digits/digits.bin");
  edit(bytes);
  TempDir dir;
  ::mkdir(dir.file("digits").c_str(), 0755);
  std::string path = dir.file("digits/digits.bin");
  write_bytes(path, bytes);
  check_throws_with<FormatError>([&] { load_digits(dir.path(), Split::train); }, {path, problem});
}

// MNIST-style files for n images of rows x cols; pixel j of image i is (7i + j) % 256.
void write_mnist(const TempDir& dir, const std::string& prefix, uint32_t n, uint32_t rows,
                 uint32_t cols) {
  std::string img = be32(0x803) + be32(n) + be32(rows) + be32(cols);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < rows * cols; ++j) img += char((7 * i + j) % 256);
  std::string lab = be32(0x801) + be32(n);
  for (uint32_t i = 0; i < n; ++i) lab += char(i % 10);
  write_bytes(dir.file(prefix + "-images-idx3-ubyte"), img);
  write_bytes(dir.file(prefix + "-labels-idx1-ubyte"), lab);
}

// A CIFAR-10 record: label, then pixel k = (label + k) % 256.
std::string cifar_record(int label) {
  std::string r(1, char(label));
  for (int k = 0; k < 3072; ++k) r += char((label + k) % 256);
  return r;
}

}  // namespace

TEST_CASE("bundled digits: counts, split, value range, class balance") {
  std::string dir = default_data_dir();
  TensorDataset train = load_digits(dir, Split::train);
  TensorDataset test = load_digits(dir, Split::test);
  CHECK(train.size() == 1442);
  CHECK(test.size() == 355);
  CHECK(train.inputs().shape() == Shape{1442, 1, 8, 8});
  CHECK(test.inputs().dtype() == kFloat32);
  CHECK(test.labels().dtype() == kInt64);

  // Class sizes of the 1,797 images, as scikit-learn documents them (load_digits).
  const int64_t expected[10] = {178, 182, 177, 183, 181, 182, 181, 179, 174, 180};
  int64_t counts[10] = {}, test_counts[10] = {};
  for (int64_t y : train.labels().to_vector<int64_t>()) counts[y]++;
  for (int64_t y : test.labels().to_vector<int64_t>()) counts[y]++, test_counts[y]++;
  for (int d = 0; d < 10; ++d) {
    CHECK(counts[d] == expected[d]);
    CHECK(test_counts[d] >= 30);  // the test part holds every class
  }
  for (const TensorDataset* ds : {&train, &test}) {
    float lo = 1, hi = 0;
    for (float v : ds->inputs().to_vector<float>()) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      CHECK(v * 16.0f == std::floor(v * 16.0f));  // k / 16
    }
    CHECK(lo == 0.0f);
    CHECK(hi == 1.0f);
  }
  // The first row of scikit-learn's digits.csv: 0,0,5,13,9,1,0,0 ... label 0.
  std::vector<float> row0 = train.get(0).input.select(0, 0).select(0, 0).to_vector<float>();
  CHECK(row0 == std::vector<float>{0, 0, 5 / 16.f, 13 / 16.f, 9 / 16.f, 1 / 16.f, 0, 0});
  CHECK(train.get(0).label == 0);
  // The digits directory itself is accepted too.
  CHECK(load_digits(dir + "/digits", Split::test).size() == 355);
}

TEST_CASE("bundled digits: a damaged file is a FormatError") {
  expect_bad_digits([](std::string& b) { b.resize(b.size() - 1); }, "expected 116837");
  expect_bad_digits([](std::string& b) { b.resize(20); }, "shorter than its header");
  expect_bad_digits([](std::string& b) { b[0] = 'X'; }, "bad magic");
  expect_bad_digits([](std::string& b) { b[8] = 2; }, "unsupported version 2");
  expect_bad_digits([](std::string& b) { b[17] = 0x10; }, "exceeds the count");
  expect_bad_digits([](std::string& b) { b[32 + 70] = 17; }, "pixel 6 of image 1 is 17");
  expect_bad_digits([](std::string& b) { b[b.size() - 1] = 10; }, "label of image 1796 is 10");
}

TEST_CASE("default_data_dir honours EMBER_DATA_DIR and says where it looked") {
  std::string found = default_data_dir();
  CHECK(ember_test::read_bytes(found + "/digits/digits.bin").size() == 116837);
  {
    TempDir dir;
    EnvVar env("EMBER_DATA_DIR", dir.path());
    CHECK(default_data_dir() == dir.path());
    // The variable wins even when the directory lacks the digits.
    check_throws_with<IOError>([&] { load_digits(default_data_dir(), Split::train); },
                               {dir.path() + "/digits/digits.bin", "No such file"});
  }
  {
    EnvVar env("EMBER_DATA_DIR", "/nonexistent/ember/data");
    check_throws_with<IOError>([] { default_data_dir(); },
                               {"EMBER_DATA_DIR", "/nonexistent/ember/data"});
  }
  CHECK(default_data_dir() == found);
}

TEST_CASE("MNIST IDX reader on synthetic files") {
  TempDir dir;
  write_mnist(dir, "train", 5, 3, 4);
  write_mnist(dir, "t10k", 2, 3, 4);
  TensorDataset train = load_mnist(dir.path(), Split::train);
  CHECK(train.inputs().shape() == Shape{5, 1, 3, 4});
  CHECK(train.labels().to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  std::vector<float> x = train.inputs().to_vector<float>();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 12; ++j) CHECK(x[i * 12 + j] == float((7 * i + j) % 256) / 255.0f);
  CHECK(load_mnist(dir.path(), Split::test).size() == 2);
}

TEST_CASE("MNIST IDX reader: each corruption is a FormatError, a missing file an IOError") {
  auto expect_bad = [](const char* which, const std::function<void(std::string&)>& edit,
                       const std::string& problem) {
    TempDir dir;
    write_mnist(dir, "train", 4, 2, 2);
    std::string path = dir.file(std::string("train-") + which);
    std::string b = read_bytes(path);
    edit(b);
    write_bytes(path, b);
    check_throws_with<FormatError>([&] { load_mnist(dir.path(), Split::train); }, {path, problem});
  };
  const char* images = "images-idx3-ubyte";
  const char* labels = "labels-idx1-ubyte";
  expect_bad(
      images, [](std::string& b) { b[3] = 0x01; }, "0x00000803");
  expect_bad(
      labels, [](std::string& b) { b[3] = 0x03; }, "0x00000801");
  expect_bad(
      images, [](std::string& b) { b.resize(10); }, "shorter than the 16-byte header");
  expect_bad(
      labels, [](std::string& b) { b.resize(6); }, "shorter than the 8-byte header");
  expect_bad(
      images, [](std::string& b) { b.pop_back(); }, "expected 32 for 4 images of 2x2");
  expect_bad(
      images, [](std::string& b) { b += "x"; }, "expected 32");
  expect_bad(
      images, [](std::string& b) { b[7] = 5; }, "expected 36 for 5 images");
  expect_bad(
      images, [](std::string& b) { b[11] = 0; }, "image size 0x2 out of range");
  expect_bad(
      images, [](std::string& b) { b[4] = char(0xff); }, "expected");  // huge count
  expect_bad(
      labels, [](std::string& b) { b.pop_back(); }, "expected 12 for 4 labels");
  expect_bad(
      labels, [](std::string& b) { b[7] = 3, b.pop_back(); }, "holds 3 labels but");
  expect_bad(
      labels, [](std::string& b) { b[9] = 10; }, "label 1 is 10, not 0..9");

  TempDir dir;
  check_throws_with<IOError>(
      [&] { load_mnist(dir.path(), Split::test); },
      {dir.file("t10k-images-idx3-ubyte"), "No such file", "t10k-labels-idx1-ubyte", "MNIST"});
  write_bytes(dir.file("t10k-images-idx3-ubyte.gz"), "gz");
  check_throws_with<IOError>([&] { load_mnist(dir.path(), Split::test); }, {"gunzip"});
}

TEST_CASE("CIFAR-10 reader on synthetic batches") {
  TempDir dir;
  ::mkdir(dir.file("cifar-10-batches-bin").c_str(), 0755);
  auto file = [&](const std::string& name) { return dir.file("cifar-10-batches-bin/" + name); };
  for (int i = 1; i <= 5; ++i)
    write_bytes(file("data_batch_" + std::to_string(i) + ".bin"),
                cifar_record(i) + (i == 3 ? cifar_record(9) : ""));
  write_bytes(file("test_batch.bin"), cifar_record(0) + cifar_record(7));

  TensorDataset train = load_cifar10(dir.path(), Split::train);  // finds the subdirectory
  CHECK(train.inputs().shape() == Shape{6, 3, 32, 32});
  CHECK(train.labels().to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 9, 4, 5});
  TensorDataset test = load_cifar10(dir.file("cifar-10-batches-bin"), Split::test);
  CHECK(test.labels().to_vector<int64_t>() == std::vector<int64_t>{0, 7});
  // Pixel k of a record is channel k / 1024, row (k % 1024) / 32, column k % 32.
  Tensor img = test.get(1).input;
  for (int k : {0, 1, 33, 1023, 1024, 2100, 3071}) {
    float v = img.select(0, k / 1024).select(0, (k % 1024) / 32).select(0, k % 32).item<float>();
    CHECK(v == float((7 + k) % 256) / 255.0f);
  }

  auto expect_bad = [&](const std::string& bytes, const std::string& problem) {
    write_bytes(file("test_batch.bin"), bytes);
    check_throws_with<FormatError>([&] { load_cifar10(dir.path(), Split::test); },
                                   {file("test_batch.bin"), problem});
  };
  expect_bad("", "0 bytes, not a positive multiple of the 3073-byte record");
  expect_bad(cifar_record(1).substr(0, 3000), "3000 bytes");
  expect_bad(cifar_record(1) + "x", "3074 bytes");
  expect_bad(cifar_record(1) + cifar_record(10), "label of record 1 is 10");

  ::unlink(file("data_batch_4.bin").c_str());
  check_throws_with<IOError>([&] { load_cifar10(dir.path(), Split::train); },
                             {file("data_batch_4.bin"), "No such file", "test_batch.bin"});
}

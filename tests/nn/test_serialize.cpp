// safetensors: round trips for every dtype and layout, the exact bytes of the reference format,
// every malformed-file case, and atomic writes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nn/serialize.h"
#include "nn_test_util.h"
#include "runtime/rng.h"

using namespace ember;
using ember_test::check_throws_with;
using ember_test::TempDir;

namespace {

// The raw bytes of a tensor in row-major order (independent of the writer).
std::string raw_bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  if (c.numel() == 0) return {};
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

Tensor sample(DType dt, const Shape& shape, uint64_t seed) {
  Generator g(seed);
  Tensor x = rand(shape, kFloat64, &g);
  if (is_floating(dt)) return x.to(dt);
  std::vector<double> v = x.to_vector<double>();
  for (double& e : v) {
    e = dt == kBool ? (e > 0.5) : std::floor(e * 250.0) - (dt == kUInt8 ? 0.0 : 120.0);
  }
  return from_vector(v, shape).to(dt);
}

// A file from a header written by hand (padded to 8) and a data buffer.
std::string file_with(std::string header, const std::string& data = "") {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

void expect_bad(const std::string& bytes, const std::string& problem) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  ember_test::write_bytes(path, bytes);
  INFO("expected problem: ", problem);
  check_throws_with<FormatError>([&] { load_safetensors(path); }, {path, problem});
  check_throws_with<FormatError>(
      [&] { deserialize_safetensors(bytes.data(), bytes.size(), "mem"); }, {"mem: ", problem});
}

}  // namespace

TEST_CASE("safetensors round trip: every dtype, 0-d, empty and non-contiguous tensors") {
  TempDir dir;
  const DType dtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
  NamedTensors in;
  uint64_t seed = 11;
  for (DType dt : dtypes) {
    std::string n = dtype_name(dt);
    in.emplace_back(n + "_2d", sample(dt, {3, 5}, seed++));
    in.emplace_back(n + "_scalar", sample(dt, {}, seed++));
    in.emplace_back(n + "_empty", empty({0, 4}, dt));
    in.emplace_back(n + "_transposed", sample(dt, {4, 6}, seed++).t());
    in.emplace_back(n + "_sliced", sample(dt, {7, 3}, seed++).slice(0, 1, 7, 2));
  }
  Metadata meta{{"format", "pt"}, {"note", "ünïcode ✓"}};
  std::string path = dir.file("all.safetensors");
  save_safetensors(path, in, meta);
  SafetensorsFile out = load_safetensors(path);
  CHECK(out.metadata == meta);
  REQUIRE(out.tensors.size() == in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    INFO(in[i].first);
    CHECK(out.tensors[i].first == in[i].first);
    const Tensor& a = in[i].second;
    const Tensor& b = out.tensors[i].second;
    CHECK(b.dtype() == a.dtype());
    CHECK(b.shape() == a.shape());
    CHECK(b.is_contiguous());
    CHECK(b.device() == kCPU);
    CHECK(raw_bytes(b) == raw_bytes(a));
    CHECK(b.to_vector<double>() == a.to_vector<double>());
  }
  CHECK(out.at("float32_scalar").dim() == 0);
  CHECK(out.contains("bool_2d"));
  CHECK_FALSE(out.contains("nope"));
  check_throws_with<IndexError>([&] { out.at("nope"); }, {"nope", "float32_2d"});
  // The in-memory form is the same bytes as the file.
  CHECK(serialize_safetensors(in, meta) == ember_test::read_bytes(path));
}

TEST_CASE("safetensors bytes match the reference layout byte for byte") {
  // What Python's `safetensors.torch.save_file({"x": torch.tensor([1., 2.])},
  // metadata={"format": "pt"})` writes: length 88 (85 bytes of JSON + 3 spaces of padding).
  std::string expected("\x58\0\0\0\0\0\0\0", 8);
  expected +=
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ";
  expected += std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);
  NamedTensors t{{"x", from_vector<float>({1.0f, 2.0f})}};
  CHECK(serialize_safetensors(t, {{"format", "pt"}}) == expected);
  TempDir dir;
  ember_test::write_bytes(dir.file("ref.safetensors"), expected);
  SafetensorsFile f = load_safetensors(dir.file("ref.safetensors"));
  CHECK(f.metadata.at("format") == "pt");
  CHECK(f.at("x").to_vector<float>() == std::vector<float>{1.0f, 2.0f});

  // No metadata: no "__metadata__" key. A 0-d int64 scalar has shape [].
  std::string scalar("\x38\0\0\0\0\0\0\0", 8);
  scalar += "{\"a\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]}}   ";
  scalar += std::string("\x2a\0\0\0\0\0\0\0", 8);
  CHECK(serialize_safetensors({{"a", full({}, 42, kInt64)}}) == scalar);
}

TEST_CASE("safetensors saves tensors from a GPU-like device through host copies") {
  Tensor host = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor dev = host.to(Device::parse("emu:0")).t();
  SafetensorsFile f = [&] {
    std::string bytes = serialize_safetensors({{"w", dev}});
    return deserialize_safetensors(bytes.data(), bytes.size());
  }();
  CHECK(f.at("w").device() == kCPU);
  CHECK(f.at("w").shape() == Shape{3, 2});
  CHECK(f.at("w").to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("safetensors writer rejects names it cannot store") {
  Tensor x = zeros({1});
  check_throws_with<ValueError>(
      [&] {
        serialize_safetensors({{"a", x}, {"a", x}});
      },
      {"duplicate", "'a'"});
  check_throws_with<ValueError>(
      [&] {
        serialize_safetensors({{"__metadata__", x}});
      },
      {"reserved"});
  check_throws_with<ValueError>([&] { serialize_safetensors({{"bad\xff", x}}); }, {"UTF-8"});
  check_throws_with<ValueError>([&] { serialize_safetensors({{"u", Tensor()}}); }, {"undefined"});
}

TEST_CASE("safetensors reader: each malformed file raises FormatError naming the problem") {
  const std::string ok_entry = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string data8(8, '\0');
  // Sanity: the well-formed base case loads.
  CHECK(deserialize_safetensors(file_with("{" + ok_entry + "}", data8).data(),
                                file_with("{" + ok_entry + "}", data8).size())
            .tensors.size() == 1);

  expect_bad("", "shorter than the 8-byte header length");
  expect_bad(std::string("\x10\0\0", 3), "shorter than the 8-byte header length");
  expect_bad(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "exceeds the limit");
  // One byte over the 100,000,000-byte limit.
  expect_bad(std::string("\x01\xe1\xf5\x05\0\0\0\0", 8) + "{}", "exceeds the limit");
  expect_bad(std::string("\x40\0\0\0\0\0\0\0", 8) + "{}      ", "runs past the end of the file");
  {
    std::string truncated = file_with("{" + ok_entry + "}", data8);
    truncated.resize(truncated.size() - 3);
    expect_bad(truncated, "lie outside the data buffer");
  }
  expect_bad(file_with(R"({"t":{"dtype":"F32",)"), "not valid JSON");
  expect_bad(file_with("[1,2,3]"), "does not start with '{'");
  expect_bad(file_with(" {}"), "does not start with '{'");
  expect_bad(file_with("{} x"), "not valid JSON");
  expect_bad(file_with(R"({"t":[1]})"), "entry 't' is not an object");
  expect_bad(file_with(R"({"t":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})",
                       std::string(2, '\0')),
             "unsupported dtype 'F8_E4M3'");
  expect_bad(file_with(R"({"t":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", data8),
             "dtype is not a string");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", data8),
             "shape is not an array");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8),
             "negative size -2");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", data8),
             "non-integer size");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],)"
                       R"("data_offsets":[0,8]}})",
                       data8),
             "overflows the byte count");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[9223372036854775808],)"
                       R"("data_offsets":[0,8]}})",
                       data8),
             "overflows the byte count");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8),
             "needs 12");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data8),
             "lie outside the data buffer of 8 bytes");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", data8),
             "end before they begin");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data8),
             "data_offsets is not a pair");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,-8]}})", data8),
             "data_offsets is not a pair");
  expect_bad(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       data8),
             "overlaps the tensor before it");
  expect_bad(file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8),
             "bytes [0, 4) of the data buffer belong to no tensor");
  expect_bad(file_with("{" + ok_entry + "}", data8 + "xx"),
             "bytes [8, 10) of the data buffer belong to no tensor");
  expect_bad(file_with("{" + ok_entry + "," + ok_entry + "}", data8), "the key 't' more than once");
  expect_bad(
      file_with(R"({"t":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data8),
      "the key 'dtype' more than once");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[2]}})", data8), "has no 'data_offsets'");
  expect_bad(file_with(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", data8),
             "unexpected key 'x'");
  expect_bad(file_with(R"({"__metadata__":{"k":1}})"), "__metadata__ value of 'k' is not a string");
  expect_bad(file_with(R"({"__metadata__":[]})"), "__metadata__ is not an object");
  expect_bad(file_with("{\"t\xff\":{}}"), "not valid JSON");
  // Deep nesting must not exhaust the stack (neither parsing nor freeing the tree).
  expect_bad(file_with("{\"t\":" + std::string(200000, '[') + std::string(200000, ']') + "}"),
             "entry 't' is not an object");
  expect_bad(file_with("{\"t\":" + std::string(200000, '[')), "not valid JSON");
  expect_bad(file_with(R"({"t":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})",
                       std::string("\x01\x02", 2)),
             "BOOL element 1 is 2");
}

TEST_CASE("safetensors reader: a missing file is an IOError naming the path") {
  TempDir dir;
  std::string path = dir.file("missing.safetensors");
  check_throws_with<IOError>([&] { load_safetensors(path); }, {path, "No such file"});
  check_throws_with<IOError>([&] { load_safetensors(dir.path()); }, {dir.path()});
}

TEST_CASE("safetensors writes are atomic") {
  TempDir dir;
  NamedTensors v1{{"w", from_vector<float>({1, 2, 3})}};
  std::string path = dir.file("state.safetensors");
  save_safetensors(path, v1);
  std::string before = ember_test::read_bytes(path);

  // A directory that does not exist: IOError, nothing created.
  std::string nowhere = dir.file("no/such/dir/state.safetensors");
  check_throws_with<IOError>([&] { save_safetensors(nowhere, v1); }, {nowhere, "No such file"});
  // The target is a directory: the rename fails after writing; the temporary is removed.
  ::mkdir(dir.file("adir").c_str(), 0755);
  ::mkdir(dir.file("adir/x").c_str(), 0755);
  check_throws_with<IOError>([&] { save_safetensors(dir.file("adir"), v1); }, {"rename"});
  // An unwritable tensor name fails before any file is created.
  CHECK_THROWS_AS(save_safetensors(path, {{"w\xff", zeros({1})}}), ValueError);
  CHECK(ember_test::read_bytes(path) == before);
  auto names = dir.list();
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"adir", "state.safetensors"});

  // Overwriting replaces the contents completely.
  save_safetensors(path, {{"w", from_vector<float>({9})}, {"b", zeros({2}, kInt64)}});
  SafetensorsFile f = load_safetensors(path);
  CHECK(f.tensors.size() == 2);
  CHECK(f.at("w").to_vector<float>() == std::vector<float>{9});
  CHECK(dir.list().size() == 2);
}

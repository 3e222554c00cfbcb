// Loading ONNX models treats every file as hostile: each malformed model, external data that
// leaves the model's folder and everything unsupported gets a typed error naming the culprit.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "onnx/model.h"
#include "onnx_builder.h"
#include "runtime/error.h"

using namespace ember;
namespace eo = ember::onnx;  // ::onnx is the protobuf classes
using onnx_test::ModelBuilder;
namespace fs = std::filesystem;

namespace {

eo::Model load_bytes(const std::string& b) { return eo::load_from_memory(b.data(), b.size()); }

ModelBuilder relu_model() {
  ModelBuilder b;
  b.input("x", {2, 3}).output("y").node("Relu", {"x"}, {"y"}, {}, "r");
  return b;
}

// A fresh folder holding `model` and, optionally, a data file beside it.
struct TempDir {
  fs::path dir;
  TempDir() {
    char tmpl[] = "/tmp/ember_onnx_XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A model whose initializer "w" [2] lives in external data at `location`.
std::string external_model(const std::string& location, int64_t offset = 0, int64_t length = 8) {
  ModelBuilder b;
  b.input("x", {2}).output("y").node("Add", {"x", "w"}, {"y"});
  auto& w = b.init("w", {2}, {0, 0});
  w.clear_raw_data();
  w.set_data_location(::onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = w.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
  return b.bytes();
}

}  // namespace

TEST_CASE("onnx load: truncated and corrupt files are FormatErrors") {
  const std::string good = relu_model().bytes();
  CHECK_NOTHROW(load_bytes(good));
  CHECK_THROWS_AS(load_bytes(good.substr(0, good.size() / 2)), FormatError);
  CHECK_THROWS_AS(load_bytes(std::string("\xff\xff\xff\xff garbage", 12)), FormatError);
  CHECK(error_of([&] { load_bytes(good.substr(0, 7)); }).find("ModelProto") != std::string::npos);
  CHECK_THROWS_AS(eo::load("/nonexistent/model.onnx"), IOError);
  CHECK_THROWS_AS(eo::load("/tmp"), IOError);  // a folder, not a file
}

TEST_CASE("onnx load: cycles, dangling inputs, outputs defined twice, missing outputs") {
  ModelBuilder cycle;
  cycle.input("x", {2}).output("y").node("Add", {"x", "b"}, {"a"}, {}, "n1")
      .node("Relu", {"a"}, {"b"}, {}, "n2").node("Relu", {"a"}, {"y"}, {}, "n3");
  CHECK(error_of([&] { load_bytes(cycle.bytes()); }).find("on a cycle") != std::string::npos);
  CHECK_THROWS_AS(load_bytes(cycle.bytes()), FormatError);

  ModelBuilder dangling;
  dangling.input("x", {2}).output("y").node("Add", {"x", "ghost"}, {"y"}, {}, "adder");
  const std::string msg = error_of([&] { load_bytes(dangling.bytes()); });
  CHECK(msg.find("adder") != std::string::npos);
  CHECK(msg.find("'ghost'") != std::string::npos);

  ModelBuilder twice;
  twice.input("x", {2}).output("y").node("Relu", {"x"}, {"y"}, {}, "a").node("Neg", {"x"}, {"y"}, {}, "b");
  CHECK(error_of([&] { load_bytes(twice.bytes()); }).find("already defined by node 'a'") != std::string::npos);

  ModelBuilder missing;
  missing.input("x", {2}).output("nowhere").node("Relu", {"x"}, {"y"});
  CHECK(error_of([&] { load_bytes(missing.bytes()); }).find("'nowhere'") != std::string::npos);
}

TEST_CASE("onnx load: tensor data is checked against shape x element size") {
  ModelBuilder short_data;
  short_data.input("x", {3}).output("y").node("Add", {"x", "w"}, {"y"});
  short_data.init("w", {3}, {1, 2});  // 8 bytes for 12
  const std::string msg = error_of([&] { load_bytes(short_data.bytes()); });
  CHECK(msg.find("initializer 'w'") != std::string::npos);
  CHECK(msg.find("needs 12") != std::string::npos);

  ModelBuilder negative;
  negative.input("x", {3}).output("y").node("Add", {"x", "w"}, {"y"});
  negative.init("w", {3}, {1, 2, 3}).set_dims(0, -3);
  CHECK(error_of([&] { load_bytes(negative.bytes()); }).find("negative dim -3") != std::string::npos);

  ModelBuilder huge;
  huge.input("x", {3}).output("y").node("Add", {"x", "w"}, {"y"});
  auto& w = huge.init("w", {1}, {1});
  w.clear_dims();
  for (int i = 0; i < 4; ++i) w.add_dims(int64_t{1} << 20);  // 2^80 elements: refused, not allocated
  CHECK(error_of([&] { load_bytes(huge.bytes()); }).find("2^40") != std::string::npos);

  ModelBuilder typed;
  typed.input("x", {2}).output("y").node("Add", {"x", "w"}, {"y"});
  auto& t = typed.init("w", {2}, {0, 0});
  t.clear_raw_data();
  t.add_float_data(1);  // one value for two
  CHECK(error_of([&] { load_bytes(typed.bytes()); }).find("float_data holds 1 values") != std::string::npos);

  // 2^39 elements (under the cap) with no data, or with 8 bytes of it: refused before anything
  // is allocated (a FormatError, not an OutOfMemory after asking for 2 TiB).
  for (bool raw : {false, true}) {
    CAPTURE(raw);
    ModelBuilder big;
    big.input("x", {3}).output("y").node("Add", {"x", "w"}, {"y"});
    auto& b = big.init("w", {2}, {0, 0});
    if (!raw) b.clear_raw_data();
    b.clear_dims();
    b.add_dims(int64_t{1} << 20);
    b.add_dims(int64_t{1} << 19);
    CHECK_THROWS_AS(load_bytes(big.bytes()), FormatError);
    CHECK(error_of([&] { load_bytes(big.bytes()); }).find(raw ? "raw data holds 8 bytes" :
                                                          "float_data holds 0 values") !=
          std::string::npos);
  }
}

TEST_CASE("onnx load: external data is read from inside the model's folder only") {
  TempDir tmp;
  const float data[2] = {1.5f, -2.0f};
  tmp.write("w.bin", std::string(reinterpret_cast<const char*>(data), 8));
  // Inside: loads and reads the values.
  const auto m = eo::load(tmp.write("ok.onnx", external_model("w.bin")));
  const auto y = m.run({from_vector<float>({1, 1})})[0].to_vector<float>();
  CHECK(y == std::vector<float>{2.5f, -1.0f});
  // '..', absolute paths and a symbolic link out are refused.
  fs::create_directories(tmp.dir / "sub");
  tmp.write("sub/up.onnx", external_model("../w.bin"));
  CHECK(error_of([&] { eo::load((tmp.dir / "sub/up.onnx").string()); }).find("leaves the model's folder") != std::string::npos);
  tmp.write("abs.onnx", external_model((tmp.dir / "w.bin").string()));
  CHECK_THROWS_AS(eo::load((tmp.dir / "abs.onnx").string()), FormatError);
  fs::create_symlink(tmp.dir / "w.bin", tmp.dir / "sub" / "link.bin");
  tmp.write("sub/link.onnx", external_model("link.bin"));
  CHECK(error_of([&] { eo::load((tmp.dir / "sub/link.onnx").string()); }).find("symbolic link") != std::string::npos);
  // Past the end of the file; and a model in memory has no folder.
  tmp.write("past.onnx", external_model("w.bin", 4, 8));
  CHECK(error_of([&] { eo::load((tmp.dir / "past.onnx").string()); }).find("past the end") != std::string::npos);
  CHECK(error_of([&] { load_bytes(external_model("w.bin")); }).find("read from memory") != std::string::npos);
}

TEST_CASE("onnx load: everything unsupported is listed at once, before anything runs") {
  ModelBuilder b;
  b.input("x", {1, 1, 4, 4}).output("z");
  b.node("Frobnicate", {"x"}, {"a"}, {}, "f");
  b.node("Relu", {"a"}, {"b"}, {onnx_test::attr_i("mystery", 1)}, "r");
  b.node("LayerNormalization", {"b", "s"}, {"z"}, {}, "ln");
  b.init("s", {4}, {1, 1, 1, 1});
  const std::string msg = error_of([&] { load_bytes(b.bytes()); });
  CHECK(msg.find("3 reasons") != std::string::npos);
  CHECK(msg.find("operator Frobnicate is not supported") != std::string::npos);
  CHECK(msg.find("Relu node 'r': attribute 'mystery' is not supported") != std::string::npos);
  CHECK(msg.find("LayerNormalization is supported from opset 17, the model imports opset 13") !=
        std::string::npos);
  CHECK_THROWS_AS(load_bytes(b.bytes()), ValueError);

  ModelBuilder newer(18);
  newer.input("x", {2}).output("y").node("Relu", {"x"}, {"y"});
  CHECK(error_of([&] { load_bytes(newer.bytes()); }).find("Ember reads opsets 1 to 17") != std::string::npos);

  ModelBuilder domain;
  domain.input("x", {2}).output("y").node("Relu", {"x"}, {"y"});
  domain.g().mutable_node(0)->set_domain("com.example");
  CHECK(error_of([&] { load_bytes(domain.bytes()); }).find("domain 'com.example'") != std::string::npos);
}

TEST_CASE("onnx run: inputs are checked against the declared dtypes and fixed dims") {
  ModelBuilder b;
  b.input("x", {-1, 3}).output("y").node("Relu", {"x"}, {"y"});
  const auto m = load_bytes(b.bytes());
  CHECK(m.run({zeros({5, 3})})[0].shape() == Shape{5, 3});  // the symbolic dim takes any size
  CHECK_THROWS_AS(m.run({zeros({5, 4})}), ShapeError);
  CHECK(error_of([&] { m.run({zeros({5, 4})}); }).find("expects shape [?, 3]") != std::string::npos);
  CHECK_THROWS_AS(m.run({zeros({5, 3}, kInt64)}), DTypeError);
  CHECK_THROWS_AS(m.run(std::vector<Tensor>{}), ValueError);
  CHECK_THROWS_AS(m.run(std::map<std::string, Tensor>{{"X", zeros({1, 3})}}), ValueError);
  const auto named = m.run(std::map<std::string, Tensor>{{"x", full({1, 3}, -2.0)}});
  CHECK(named.at("y").to_vector<float>() == std::vector<float>{0, 0, 0});
}

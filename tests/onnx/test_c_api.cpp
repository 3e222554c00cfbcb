// The C API (onnx/ember_c.h): what a model declares, values of small models against sums and
// maxima computed here, on cpu and emu, and every status a caller can provoke, each with a
// message that names the function and the argument at fault.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "onnx/ember_c.h"
#include "onnx_builder.h"

using ember::onnx_test::ModelBuilder;
using ember::onnx_test::random_values;

namespace {

using SessionPtr = std::unique_ptr<ember_session, decltype(&ember_session_free)>;

SessionPtr load(const std::string& bytes, const char* device = "cpu", int optimize = 1) {
  ember_session* s = nullptr;
  const ember_status st =
      ember_session_create_from_memory(bytes.data(), bytes.size(), device, optimize, &s);
  INFO(ember_last_error());
  REQUIRE(st == EMBER_OK);
  REQUIRE(s != nullptr);
  return SessionPtr(s, ember_session_free);
}

// The call's status must be `want` and the thread's last error must hold every one of `parts`.
#define CHECK_STATUS(call, want, ...)                                                    \
  do {                                                                                   \
    const ember_status got_ = (call);                                                    \
    const std::string msg_ = ember_last_error();                                         \
    INFO(#call, " -> ", msg_);                                                           \
    CHECK(std::string(ember_status_name(got_)) == std::string(ember_status_name(want))); \
    for (const std::string part_ : std::vector<const char*>{__VA_ARGS__})                \
      CHECK_MESSAGE(msg_.find(part_) != std::string::npos, "missing '", part_, "'");     \
  } while (0)

// y = Relu(a + b), z = a + b; a [2, 3], b [N, 3] with N symbolic (broadcast needs N = 2 or 1).
std::string add_relu_model() {
  ModelBuilder m;
  m.input("a", {2, 3}).input("b", {-1, 3}).output("y").output("z");
  m.node("Add", {"a", "b"}, {"z"}, {}, "add");
  m.node("Relu", {"z"}, {"y"}, {}, "relu");
  return m.bytes();
}

template <typename T>
std::vector<T> result_values(ember_session* s, size_t index) {
  size_t bytes = 0;
  REQUIRE(ember_session_result_bytes(s, index, &bytes) == EMBER_OK);
  std::vector<T> v(bytes / sizeof(T));
  REQUIRE(ember_session_result_copy(s, index, v.data(), bytes) == EMBER_OK);
  return v;
}

std::vector<int64_t> result_shape(ember_session* s, size_t index) {
  size_t rank = 99;
  const int64_t* dims = nullptr;
  REQUIRE(ember_session_result_shape(s, index, &rank, &dims) == EMBER_OK);
  return std::vector<int64_t>(dims, dims + rank);
}

}  // namespace

TEST_CASE("c api: version, status names, element sizes") {
  const std::string v = ember_version();
  CHECK(v.find('.') != std::string::npos);
  CHECK(v.find_first_not_of("0123456789.") == std::string::npos);
  CHECK(ember_api_version() == EMBER_C_API_VERSION);
  CHECK(std::string(ember_status_name(EMBER_OK)) == "EMBER_OK");
  CHECK(std::string(ember_status_name(EMBER_SHAPE_ERROR)) == "EMBER_SHAPE_ERROR");
  CHECK(std::string(ember_status_name(EMBER_INTERNAL)) == "EMBER_INTERNAL");
  CHECK(std::string(ember_status_name(static_cast<ember_status>(77))) == "EMBER_UNKNOWN_STATUS");
  const std::pair<ember_element_type, size_t> sizes[] = {
      {EMBER_FLOAT32, 4}, {EMBER_FLOAT64, 8}, {EMBER_FLOAT16, 2}, {EMBER_BFLOAT16, 2},
      {EMBER_INT32, 4},   {EMBER_INT64, 8},   {EMBER_UINT8, 1},   {EMBER_BOOL, 1}};
  for (const auto& [type, want] : sizes) {
    size_t got = 0;
    CHECK(ember_element_size(type, &got) == EMBER_OK);
    CHECK(got == want);
  }
  size_t got = 0;
  CHECK_STATUS(ember_element_size(EMBER_UNDEFINED, &got), EMBER_INVALID_ARGUMENT,
               "ember_element_size: type is 0");
  CHECK_STATUS(ember_element_size(static_cast<ember_element_type>(3), &got), EMBER_INVALID_ARGUMENT,
               "type is 3");
  CHECK_STATUS(ember_element_size(EMBER_FLOAT32, nullptr), EMBER_INVALID_ARGUMENT,
               "ember_element_size: size is NULL");
}

TEST_CASE("c api: what the model declares") {
  auto s = load(add_relu_model());
  size_t n = 0;
  REQUIRE(ember_session_input_count(s.get(), &n) == EMBER_OK);
  CHECK(n == 2);
  REQUIRE(ember_session_output_count(s.get(), &n) == EMBER_OK);
  CHECK(n == 2);
  const char* name = nullptr;
  REQUIRE(ember_session_input_name(s.get(), 1, &name) == EMBER_OK);
  CHECK(std::string(name) == "b");
  REQUIRE(ember_session_output_name(s.get(), 0, &name) == EMBER_OK);
  CHECK(std::string(name) == "y");
  ember_element_type type = EMBER_UNDEFINED;
  REQUIRE(ember_session_input_type(s.get(), 0, &type) == EMBER_OK);
  CHECK(type == EMBER_FLOAT32);
  REQUIRE(ember_session_output_type(s.get(), 1, &type) == EMBER_OK);
  CHECK(type == EMBER_FLOAT32);
  int64_t rank = 0;
  const int64_t* dims = nullptr;
  REQUIRE(ember_session_input_shape(s.get(), 1, &rank, &dims) == EMBER_OK);
  REQUIRE(rank == 2);
  CHECK(dims[0] == -1);  // symbolic
  CHECK(dims[1] == 3);
  REQUIRE(ember_session_output_shape(s.get(), 0, &rank, &dims) == EMBER_OK);
  CHECK(rank == -1);  // the file gives no shape for the outputs
  size_t index = 9;
  REQUIRE(ember_session_input_index(s.get(), "b", &index) == EMBER_OK);
  CHECK(index == 1);
  REQUIRE(ember_session_output_index(s.get(), "z", &index) == EMBER_OK);
  CHECK(index == 1);
  const char* device = nullptr;
  REQUIRE(ember_session_device(s.get(), &device) == EMBER_OK);
  CHECK(std::string(device) == "cpu");
}

TEST_CASE("c api: Add and Relu equal the sums and maxima computed here, on cpu and emu") {
  const uint32_t seed = std::random_device{}();
  MESSAGE("seed ", seed);
  const auto a = random_values(6, seed), b = random_values(6, seed + 1);
  const int64_t shape[] = {2, 3};
  for (const char* device : {"cpu", "emu"})
    for (int optimize : {0, 1}) {
      CAPTURE(device);
      CAPTURE(optimize);
      auto s = load(add_relu_model(), device, optimize);
      REQUIRE(ember_session_set_input(s.get(), 0, EMBER_FLOAT32, shape, 2, a.data(), 24) ==
              EMBER_OK);
      REQUIRE(ember_session_set_input_by_name(s.get(), "b", EMBER_FLOAT32, shape, 2, b.data(),
                                              24) == EMBER_OK);
      INFO(ember_last_error());
      REQUIRE(ember_session_run(s.get()) == EMBER_OK);
      ember_element_type type = EMBER_UNDEFINED;
      REQUIRE(ember_session_result_type(s.get(), 0, &type) == EMBER_OK);
      CHECK(type == EMBER_FLOAT32);
      CHECK(result_shape(s.get(), 0) == std::vector<int64_t>{2, 3});
      const auto y = result_values<float>(s.get(), 0);
      const void* z = nullptr;
      REQUIRE(ember_session_result_data(s.get(), 1, &z) == EMBER_OK);
      REQUIRE(y.size() == 6);
      for (size_t i = 0; i < 6; ++i) {
        const double sum = static_cast<double>(a[i]) + b[i];
        CHECK(y[i] == doctest::Approx(std::max(0.0, sum)).epsilon(1e-6));
        CHECK(static_cast<const float*>(z)[i] == doctest::Approx(sum).epsilon(1e-6));
      }
      double ms = -1;
      size_t peak = 0;
      REQUIRE(ember_session_last_run(s.get(), &ms, &peak) == EMBER_OK);
      CHECK(ms >= 0);
      CHECK(peak > 0);
      // Inputs keep their values over runs: set b alone to a broadcast row, run again.
      const float row[] = {1, -2, 3};
      const int64_t row_shape[] = {1, 3};
      REQUIRE(ember_session_set_input(s.get(), 1, EMBER_FLOAT32, row_shape, 2, row, 12) ==
              EMBER_OK);
      REQUIRE(ember_session_run(s.get()) == EMBER_OK);
      const auto z2 = result_values<float>(s.get(), 1);
      REQUIRE(z2.size() == 6);
      for (size_t i = 0; i < 6; ++i)
        CHECK(z2[i] == doctest::Approx(static_cast<double>(a[i]) + row[i % 3]).epsilon(1e-6));
    }
}

TEST_CASE("c api: int64, bool and empty tensors cross the boundary with their types") {
  // r = Where(c, Cast<int64>(x), k): bool and int64 inputs, an int64 result.
  ModelBuilder m;
  m.input("c", {4}, ::onnx::TensorProto::BOOL)
      .input("x", {4})
      .input("k", {4}, ::onnx::TensorProto::INT64);
  m.output("r", ::onnx::TensorProto::INT64);
  m.node("Cast", {"x"}, {"xi"}, {ember::onnx_test::attr_i("to", ::onnx::TensorProto::INT64)});
  m.node("Where", {"c", "xi", "k"}, {"r"});
  auto s = load(m.bytes());
  const uint8_t c[] = {1, 0, 0, 1};
  const float x[] = {7.0f, -3.0f, 2.0f, -5.0f};
  const int64_t k[] = {int64_t(1) << 40, -1, 42, 0};
  const int64_t shape[] = {4};
  REQUIRE(ember_session_set_input(s.get(), 0, EMBER_BOOL, shape, 1, c, 4) == EMBER_OK);
  REQUIRE(ember_session_set_input(s.get(), 1, EMBER_FLOAT32, shape, 1, x, 16) == EMBER_OK);
  REQUIRE(ember_session_set_input(s.get(), 2, EMBER_INT64, shape, 1, k, 32) == EMBER_OK);
  INFO(ember_last_error());
  REQUIRE(ember_session_run(s.get()) == EMBER_OK);
  ember_element_type type = EMBER_UNDEFINED;
  REQUIRE(ember_session_result_type(s.get(), 0, &type) == EMBER_OK);
  CHECK(type == EMBER_INT64);
  CHECK(result_values<int64_t>(s.get(), 0) == std::vector<int64_t>{7, -1, 42, -5});

  // An empty batch: no elements, a NULL data pointer allowed, a 0-byte copy into NULL is fine.
  ModelBuilder r;
  r.input("x", {-1, 3}).output("y").node("Relu", {"x"}, {"y"});
  auto e = load(r.bytes());
  const int64_t empty[] = {0, 3};
  REQUIRE(ember_session_set_input(e.get(), 0, EMBER_FLOAT32, empty, 2, nullptr, 0) == EMBER_OK);
  REQUIRE(ember_session_run(e.get()) == EMBER_OK);
  CHECK(result_shape(e.get(), 0) == std::vector<int64_t>{0, 3});
  size_t bytes = 1;
  REQUIRE(ember_session_result_bytes(e.get(), 0, &bytes) == EMBER_OK);
  CHECK(bytes == 0);
  const void* data = &bytes;
  REQUIRE(ember_session_result_data(e.get(), 0, &data) == EMBER_OK);
  CHECK(data == nullptr);
  CHECK(ember_session_result_copy(e.get(), 0, nullptr, 0) == EMBER_OK);
}

TEST_CASE("c api: NULL arguments are INVALID_ARGUMENT, naming the function and the argument") {
  auto s = load(add_relu_model());
  ember_session* out = nullptr;
  size_t n = 0;
  const char* str = nullptr;
  ember_element_type type;
  int64_t rank = 0;
  size_t urank = 0;
  const int64_t* dims = nullptr;
  const void* data = nullptr;
  const int64_t shape[] = {2, 3};
  const float values[6] = {};
  const std::string bytes = add_relu_model();
  const struct {
    std::function<ember_status()> call;
    const char* message;
  } cases[] = {
      {[&] { return ember_session_create_from_file(nullptr, "cpu", 1, &out); },
       "ember_session_create_from_file: path is NULL"},
      {[&] { return ember_session_create_from_file("m.onnx", "cpu", 1, nullptr); },
       "ember_session_create_from_file: session is NULL"},
      {[&] { return ember_session_create_from_memory(nullptr, 10, "cpu", 1, &out); },
       "ember_session_create_from_memory: data is NULL"},
      {[&] { return ember_session_create_from_memory(bytes.data(), 0, "cpu", 1, &out); },
       "ember_session_create_from_memory: size is 0"},
      {[&] {
         return ember_session_create_from_memory(bytes.data(), bytes.size(), "cpu", 1, nullptr);
       },
       "ember_session_create_from_memory: session is NULL"},
      {[&] { return ember_session_device(nullptr, &str); },
       "ember_session_device: session is NULL"},
      {[&] { return ember_session_device(s.get(), nullptr); },
       "ember_session_device: device is NULL"},
      {[&] { return ember_session_input_count(nullptr, &n); },
       "ember_session_input_count: session is NULL"},
      {[&] { return ember_session_input_count(s.get(), nullptr); },
       "ember_session_input_count: count is NULL"},
      {[&] { return ember_session_output_count(nullptr, &n); },
       "ember_session_output_count: session is NULL"},
      {[&] { return ember_session_output_count(s.get(), nullptr); },
       "ember_session_output_count: count is NULL"},
      {[&] { return ember_session_input_name(nullptr, 0, &str); },
       "ember_session_input_name: session is NULL"},
      {[&] { return ember_session_input_name(s.get(), 0, nullptr); },
       "ember_session_input_name: name is NULL"},
      {[&] { return ember_session_output_name(s.get(), 0, nullptr); },
       "ember_session_output_name: name is NULL"},
      {[&] { return ember_session_input_type(nullptr, 0, &type); },
       "ember_session_input_type: session is NULL"},
      {[&] { return ember_session_output_type(s.get(), 0, nullptr); },
       "ember_session_output_type: type is NULL"},
      {[&] { return ember_session_input_shape(s.get(), 0, nullptr, &dims); },
       "ember_session_input_shape: rank is NULL"},
      {[&] { return ember_session_output_shape(s.get(), 0, &rank, nullptr); },
       "ember_session_output_shape: dims is NULL"},
      {[&] { return ember_session_input_index(s.get(), nullptr, &n); },
       "ember_session_input_index: name is NULL"},
      {[&] { return ember_session_output_index(s.get(), "y", nullptr); },
       "ember_session_output_index: index is NULL"},
      {[&] { return ember_session_set_input(nullptr, 0, EMBER_FLOAT32, shape, 2, values, 24); },
       "ember_session_set_input: session is NULL"},
      {[&] { return ember_session_set_input(s.get(), 0, EMBER_FLOAT32, nullptr, 2, values, 24); },
       "ember_session_set_input: shape is NULL"},
      {[&] { return ember_session_set_input(s.get(), 0, EMBER_FLOAT32, shape, 2, nullptr, 24); },
       "ember_session_set_input: data is NULL"},
      {[&] {
         return ember_session_set_input_by_name(s.get(), nullptr, EMBER_FLOAT32, shape, 2, values,
                                                24);
       },
       "ember_session_set_input_by_name: name is NULL"},
      {[&] { return ember_session_run(nullptr); }, "ember_session_run: session is NULL"},
      {[&] { return ember_session_result_type(nullptr, 0, &type); },
       "ember_session_result_type: session is NULL"},
      {[&] { return ember_session_result_shape(nullptr, 0, &urank, &dims); },
       "ember_session_result_shape: session is NULL"},
      {[&] { return ember_session_result_bytes(nullptr, 0, &n); },
       "ember_session_result_bytes: session is NULL"},
      {[&] { return ember_session_result_copy(nullptr, 0, &n, 8); },
       "ember_session_result_copy: session is NULL"},
      {[&] { return ember_session_result_data(nullptr, 0, &data); },
       "ember_session_result_data: session is NULL"},
      {[&] { return ember_session_last_run(nullptr, nullptr, nullptr); },
       "ember_session_last_run: session is NULL"},
  };
  for (const auto& c : cases) CHECK_STATUS(c.call(), EMBER_INVALID_ARGUMENT, c.message);
  CHECK(out == nullptr);  // never written on failure

  // After a run, the result functions check their out pointers too.
  REQUIRE(ember_session_set_input(s.get(), 0, EMBER_FLOAT32, shape, 2, values, 24) == EMBER_OK);
  REQUIRE(ember_session_set_input(s.get(), 1, EMBER_FLOAT32, shape, 2, values, 24) == EMBER_OK);
  REQUIRE(ember_session_run(s.get()) == EMBER_OK);
  CHECK_STATUS(ember_session_result_type(s.get(), 0, nullptr), EMBER_INVALID_ARGUMENT,
               "ember_session_result_type: type is NULL");
  CHECK_STATUS(ember_session_result_shape(s.get(), 0, &urank, nullptr), EMBER_INVALID_ARGUMENT,
               "ember_session_result_shape: dims is NULL");
  CHECK_STATUS(ember_session_result_bytes(s.get(), 0, nullptr), EMBER_INVALID_ARGUMENT,
               "ember_session_result_bytes: bytes is NULL");
  CHECK_STATUS(ember_session_result_copy(s.get(), 0, nullptr, 24), EMBER_INVALID_ARGUMENT,
               "ember_session_result_copy: buffer is NULL");
  CHECK_STATUS(ember_session_result_data(s.get(), 0, nullptr), EMBER_INVALID_ARGUMENT,
               "ember_session_result_data: data is NULL");
  CHECK(ember_session_last_run(s.get(), nullptr, nullptr) == EMBER_OK);  // both optional
}

TEST_CASE("c api: indices, names, sizes, element types and missing inputs are checked") {
  auto s = load(add_relu_model());
  const char* str = nullptr;
  size_t n = 0;
  const int64_t shape[] = {2, 3};
  const float values[6] = {};
  CHECK_STATUS(ember_session_input_name(s.get(), 2, &str), EMBER_INVALID_ARGUMENT,
               "ember_session_input_name: index 2 is out of range: the model has 2 inputs");
  CHECK_STATUS(ember_session_output_name(s.get(), 5, &str), EMBER_INVALID_ARGUMENT,
               "index 5 is out of range: the model has 2 outputs");
  CHECK_STATUS(ember_session_input_index(s.get(), "c", &n), EMBER_INVALID_ARGUMENT,
               "ember_session_input_index: the model has no input named 'c' (it has 'a', 'b')");
  CHECK_STATUS(ember_session_output_index(s.get(), "a", &n), EMBER_INVALID_ARGUMENT,
               "no output named 'a' (it has 'y', 'z')");
  CHECK_STATUS(ember_session_set_input_by_name(s.get(), "x", EMBER_FLOAT32, shape, 2, values, 24),
               EMBER_INVALID_ARGUMENT,
               "ember_session_set_input_by_name: the model has no input named 'x'");
  CHECK_STATUS(ember_session_set_input(s.get(), 2, EMBER_FLOAT32, shape, 2, values, 24),
               EMBER_INVALID_ARGUMENT, "ember_session_set_input: index 2 is out of range");
  CHECK_STATUS(ember_session_set_input(s.get(), 0, EMBER_FLOAT32, shape, 2, values, 20),
               EMBER_INVALID_ARGUMENT,
               "ember_session_set_input: data_bytes is 20, expected 24 (6 float32 elements of "
               "shape [2, 3])");
  CHECK_STATUS(ember_session_set_input(s.get(), 0, EMBER_FLOAT64, shape, 2, values, 24),
               EMBER_INVALID_ARGUMENT, "data_bytes is 24, expected 48");
  CHECK_STATUS(ember_session_set_input(s.get(), 0, EMBER_UNDEFINED, shape, 2, values, 24),
               EMBER_INVALID_ARGUMENT, "ember_session_set_input: type is 0");
  CHECK_STATUS(
      ember_session_set_input(s.get(), 0, static_cast<ember_element_type>(8), shape, 2, values, 24),
      EMBER_INVALID_ARGUMENT, "type is 8, not an ember_element_type");
  const int64_t negative[] = {2, -3};
  CHECK_STATUS(ember_session_set_input(s.get(), 0, EMBER_FLOAT32, negative, 2, values, 24),
               EMBER_INVALID_ARGUMENT, "ember_session_set_input: shape[1] is -3");
  const int64_t huge[] = {int64_t(1) << 40, int64_t(1) << 40};
  CHECK_STATUS(ember_session_set_input(s.get(), 0, EMBER_FLOAT32, huge, 2, values, 24),
               EMBER_INVALID_ARGUMENT, "more elements than memory can hold");
  const int64_t four[] = {4};
  const uint8_t flags[] = {0, 1, 2, 1};
  CHECK_STATUS(ember_session_set_input(s.get(), 0, EMBER_BOOL, four, 1, flags, 4),
               EMBER_INVALID_ARGUMENT, "data[2] is 2: EMBER_BOOL elements must be 0 or 1");

  // Before a successful run there are no results; a missing input is named.
  CHECK_STATUS(ember_session_result_bytes(s.get(), 0, &n), EMBER_INVALID_ARGUMENT,
               "ember_session_result_bytes: no results: ember_session_run has not succeeded");
  CHECK_STATUS(ember_session_last_run(s.get(), nullptr, nullptr), EMBER_INVALID_ARGUMENT,
               "ember_session_last_run: no run");
  REQUIRE(ember_session_set_input(s.get(), 0, EMBER_FLOAT32, shape, 2, values, 24) == EMBER_OK);
  CHECK_STATUS(ember_session_run(s.get()), EMBER_INVALID_ARGUMENT,
               "ember_session_run: input 1 ('b') has not been set");
  REQUIRE(ember_session_set_input(s.get(), 1, EMBER_FLOAT32, shape, 2, values, 24) == EMBER_OK);
  REQUIRE(ember_session_run(s.get()) == EMBER_OK);
  CHECK_STATUS(ember_session_result_data(s.get(), 2, nullptr), EMBER_INVALID_ARGUMENT,
               "ember_session_result_data: index 2 is out of range: the model has 2 outputs");
  std::vector<float> small(5);
  CHECK_STATUS(ember_session_result_copy(s.get(), 0, small.data(), 20), EMBER_INVALID_ARGUMENT,
               "ember_session_result_copy: buffer_bytes is 20, the result needs 24 (6 float32 "
               "elements of shape [2, 3])");
  std::vector<float> large(8, -7.0f);
  CHECK(ember_session_result_copy(s.get(), 0, large.data(), 32) == EMBER_OK);
  CHECK(large[6] == -7.0f);  // past the result: untouched
  CHECK(large[0] == 0.0f);
}

TEST_CASE("c api: bad models and devices: FORMAT_ERROR, IO_ERROR, UNSUPPORTED, DEVICE_ERROR") {
  ember_session* s = nullptr;
  const std::string good = add_relu_model();
  const std::string cut = good.substr(0, good.size() / 2);
  CHECK_STATUS(ember_session_create_from_memory(cut.data(), cut.size(), "cpu", 1, &s),
               EMBER_FORMAT_ERROR,
               "ember_session_create_from_memory: model in memory:", "not a valid onnx.ModelProto");
  const std::string junk = "\xff\xff\xff\xff this is not a protobuf";
  CHECK_STATUS(ember_session_create_from_memory(junk.data(), junk.size(), "cpu", 1, &s),
               EMBER_FORMAT_ERROR, "ember_session_create_from_memory:");
  CHECK_STATUS(ember_session_create_from_file("/nonexistent/ember/model.onnx", "cpu", 1, &s),
               EMBER_IO_ERROR, "ember_session_create_from_file:", "/nonexistent/ember/model.onnx");

  ModelBuilder unsupported;
  unsupported.input("x", {2}).output("y").node("NonMaxSuppression", {"x"}, {"m"}, {}, "nms");
  unsupported.node("Relu", {"m"}, {"y"});
  const std::string u = unsupported.bytes();
  CHECK_STATUS(ember_session_create_from_memory(u.data(), u.size(), "cpu", 1, &s),
               EMBER_UNSUPPORTED, "ember_session_create_from_memory:", "cannot run this model",
               "NonMaxSuppression");
  ModelBuilder old_opset(99);
  old_opset.input("x", {2}).output("y").node("Relu", {"x"}, {"y"});
  const std::string o = old_opset.bytes();
  CHECK_STATUS(ember_session_create_from_memory(o.data(), o.size(), "cpu", 1, &s),
               EMBER_UNSUPPORTED, "opset 99");

  CHECK_STATUS(ember_session_create_from_memory(good.data(), good.size(), "gpu", 1, &s),
               EMBER_INVALID_ARGUMENT,
               "ember_session_create_from_memory: device: unknown device 'gpu'");
  CHECK_STATUS(ember_session_create_from_memory(good.data(), good.size(), "emu:99", 1, &s),
               EMBER_DEVICE_ERROR, "ember_session_create_from_memory:", "emu:99");
  CHECK(s == nullptr);
  // NULL device means the cpu.
  REQUIRE(ember_session_create_from_memory(good.data(), good.size(), nullptr, 1, &s) == EMBER_OK);
  const char* device = nullptr;
  CHECK(ember_session_device(s, &device) == EMBER_OK);
  CHECK(std::string(device) == "cpu");
  ember_session_free(s);
}

TEST_CASE("c api: errors while running: SHAPE, DTYPE, INDEX, VALUE_ERROR, OUT_OF_MEMORY") {
  auto s = load(add_relu_model());
  const int64_t shape[] = {2, 3}, wrong[] = {3, 3}, four[] = {4, 3};
  const double d[9] = {};
  const float f[12] = {};
  // Checked against the declaration when the model runs.
  REQUIRE(ember_session_set_input(s.get(), 0, EMBER_FLOAT32, wrong, 2, f, 36) == EMBER_OK);
  REQUIRE(ember_session_set_input(s.get(), 1, EMBER_FLOAT32, shape, 2, f, 24) == EMBER_OK);
  CHECK_STATUS(ember_session_run(s.get()), EMBER_SHAPE_ERROR,
               "ember_session_run: onnx run: input 'a' expects shape [2, 3], got [3, 3]");
  REQUIRE(ember_session_set_input(s.get(), 0, EMBER_FLOAT64, shape, 2, d, 48) == EMBER_OK);
  CHECK_STATUS(ember_session_run(s.get()), EMBER_DTYPE_ERROR,
               "ember_session_run: onnx run: input 'a' expects float32, got float64");
  // A symbolic dim the Add cannot broadcast: the node's own ShapeError.
  REQUIRE(ember_session_set_input(s.get(), 0, EMBER_FLOAT32, shape, 2, f, 24) == EMBER_OK);
  REQUIRE(ember_session_set_input(s.get(), 1, EMBER_FLOAT32, four, 2, f, 48) == EMBER_OK);
  CHECK_STATUS(ember_session_run(s.get()), EMBER_SHAPE_ERROR,
               "ember_session_run: Add node 'add': add: shapes [2, 3] and [4, 3] do not broadcast");
  size_t n = 0;
  CHECK_STATUS(ember_session_result_bytes(s.get(), 0, &n), EMBER_INVALID_ARGUMENT, "no results");

  ModelBuilder gather;
  gather.input("x", {3}).input("i", {1}, ::onnx::TensorProto::INT64).output("y");
  gather.node("Gather", {"x", "i"}, {"y"});
  auto g = load(gather.bytes());
  const int64_t three[] = {3}, one[] = {1}, index[] = {5};
  REQUIRE(ember_session_set_input(g.get(), 0, EMBER_FLOAT32, three, 1, f, 12) == EMBER_OK);
  REQUIRE(ember_session_set_input(g.get(), 1, EMBER_INT64, one, 1, index, 8) == EMBER_OK);
  CHECK_STATUS(ember_session_run(g.get()), EMBER_INDEX_ERROR, "ember_session_run: Gather node",
               "index 5 is out of bounds");

  // A petabyte of zeros on the emulated GPU, whose memory is counted against a capacity (so no
  // host allocation is attempted): the device allocator's OutOfMemory.
  ModelBuilder fill;
  fill.input("shape", {1}, ::onnx::TensorProto::INT64).output("y");
  fill.node("ConstantOfShape", {"shape"}, {"y"});
  auto c = load(fill.bytes(), "emu");
  const int64_t petabyte[] = {int64_t(1) << 48};
  REQUIRE(ember_session_set_input(c.get(), 0, EMBER_INT64, one, 1, petabyte, 8) == EMBER_OK);
  CHECK_STATUS(ember_session_run(c.get()), EMBER_OUT_OF_MEMORY,
               "ember_session_run: out of memory on emu:0");

  // Reflect pads wider than the input: values the node cannot use.
  ModelBuilder pad;
  pad.input("x", {3}).input("p", {2}, ::onnx::TensorProto::INT64).output("y");
  pad.node("Pad", {"x", "p"}, {"y"}, {ember::onnx_test::attr_s("mode", "reflect")});
  auto p = load(pad.bytes());
  const int64_t two[] = {2}, pads[] = {5, 5};
  REQUIRE(ember_session_set_input(p.get(), 0, EMBER_FLOAT32, three, 1, f, 12) == EMBER_OK);
  REQUIRE(ember_session_set_input(p.get(), 1, EMBER_INT64, two, 1, pads, 16) == EMBER_OK);
  CHECK_STATUS(ember_session_run(p.get()), EMBER_VALUE_ERROR, "ember_session_run: Pad node");
}

TEST_CASE("c api: the last error is per thread and successful calls keep it") {
  size_t n = 0;
  CHECK(ember_element_size(EMBER_UNDEFINED, &n) == EMBER_INVALID_ARGUMENT);
  const std::string mine = ember_last_error();
  CHECK(mine.find("ember_element_size") == 0);
  CHECK(ember_element_size(EMBER_FLOAT32, &n) == EMBER_OK);
  CHECK(ember_last_error() == mine);
  std::string theirs_before, theirs_after;
  std::thread other([&] {
    theirs_before = ember_last_error();
    ember_session_run(nullptr);
    theirs_after = ember_last_error();
  });
  other.join();
  CHECK(theirs_before.empty());
  CHECK(theirs_after == "ember_session_run: session is NULL");
  CHECK(ember_last_error() == mine);
}

TEST_CASE("c api: sessions on different threads run at the same time") {
  const std::string bytes = add_relu_model();
  std::vector<std::vector<float>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      ember_session* s = nullptr;
      if (ember_session_create_from_memory(bytes.data(), bytes.size(), "cpu", 1, &s) != EMBER_OK)
        return;
      const int64_t shape[] = {2, 3};
      std::vector<float> a(6, static_cast<float>(t)), b(6, 0.5f), z(6);
      for (int run = 0; run < 20; ++run)
        if (ember_session_set_input(s, 0, EMBER_FLOAT32, shape, 2, a.data(), 24) != EMBER_OK ||
            ember_session_set_input(s, 1, EMBER_FLOAT32, shape, 2, b.data(), 24) != EMBER_OK ||
            ember_session_run(s) != EMBER_OK ||
            ember_session_result_copy(s, 1, z.data(), 24) != EMBER_OK)
          break;
      got[t] = z;
      ember_session_free(s);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) CHECK(got[t] == std::vector<float>(6, t + 0.5f));
}

TEST_CASE("c api: freeing NULL does nothing") {
  ember_session_free(nullptr);
  CHECK(std::string(ember_last_error()).find("ember_session_free") == std::string::npos);
}

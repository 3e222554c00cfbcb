// The op trace (Note [Op trace] in runtime/trace.h): every compute kernel called through a
// kernel table while tracing is recorded with its name, device and sizes; queries are not; a
// Chrome trace file is valid JSON; nothing is recorded once the trace stops.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "autograd/functions.h"
#include "ops/conv2d.h"
#include "ops/elementwise.h"
#include "ops/op_test_util.h"
#include "runtime/trace.h"

namespace ember::test {

TEST_CASE("a traced run records each kernel with its device and sizes, in a Chrome trace file") {
  const std::string path = "ember_test_trace_" + std::to_string(fresh_seed()) + ".json";
  for (Device dev : {Device(), Device(DeviceType::EMU, 0)}) {
    CAPTURE(dev);
    const Tensor x = ones({1, 2, 5, 5}, {kFloat32, dev}), w = ones({3, 2, 3, 3}, {kFloat32, dev});
    trace::start(path);
    CHECK(trace::enabled());
    const Tensor y = ops::add(x, x);
    const Tensor z = ops::conv2d(y, w, Tensor(), ops::Conv2dParams{});
    const size_t events = trace::stop();
    CHECK_FALSE(trace::enabled());
    CHECK(z.numel() == 1 * 3 * 3 * 3);
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in);  // throws on malformed JSON
    const auto& ev = j.at("traceEvents");
    CHECK(ev.size() == events);
    bool saw_add = false, saw_conv = false;
    for (const auto& e : ev) {
      CHECK(e.at("ph") == "X");
      CHECK(e.at("dur").get<double>() >= 0.0);
      CHECK(e.at("args").at("device") == dev.str());
      const std::string name = e.at("name");
      CHECK(name.find("_bytes") == std::string::npos);  // queries are not recorded
      CHECK(name.find("_supports") == std::string::npos);
      if (name == "binary_contiguous") {
        saw_add = true;
        check_message(e.at("args").at("args"), {"add", "float32", "n=50"});
      }
      if (name.rfind("conv2d ", 0) == 0) {
        saw_conv = true;  // the chosen algorithm around its kernels
        check_message(e.at("args").at("args"), {"N1 C2 H5 W5 K3 R3 S3"});
      }
    }
    CHECK(saw_add);
    CHECK(saw_conv);
    // Stopped: nothing more is recorded.
    ops::add(x, x);
    CHECK(trace::stop() == 0);
  }
  std::remove(path.c_str());
  CHECK_THROWS_AS(trace::start("trace.txt"), ValueError);
  CHECK_THROWS_AS(trace::start("/nonexistent-folder/trace.json"), IOError);
  CHECK_FALSE(trace::enabled());
}

}  // namespace ember::test

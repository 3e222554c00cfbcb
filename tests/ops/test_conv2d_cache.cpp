// The benchmark cache file: a round trip gives the same choices without timing; a garbage,
// truncated, edited, other-version, other-device or other-algorithm-set file is refused with a
// FormatError naming the file (through the API), or reported once while the run goes on with an
// empty cache (through EMBER_CONV_CACHE). The checksum is recomputed here from the format's
// definition in docs/conv.md, so the edited files are refused for what they say, not for it.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "conv_select_util.h"
#include "op_test_util.h"
#include "ops/conv2d.h"
#include "ops/conv2d_algo.h"
#include "ops/conv_test_util.h"

using namespace ember;
using namespace ember::test;
using nlohmann::json;
using ops::ConvDirection;

namespace {

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/ember_conv_cache_" +
         std::to_string(std::random_device{}()) + "_" + name + ".json";
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// docs/conv.md: "checksum" is "fnv1a64:" and 16 hex digits of FNV-1a (64-bit) over the compact
// JSON dump of the document without its "checksum" member.
std::string with_checksum(json doc) {
  doc.erase("checksum");
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : doc.dump()) h = (h ^ c) * 1099511628211ull;
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  doc["checksum"] = buf;
  return doc.dump(1);
}

struct Layer {
  Shape x, w;
  ops::Conv2dParams p;
};
const Layer kLayers[] = {{{2, 3, 9, 9}, {4, 3, 3, 3}, conv_params(1, 1, 1, 1, 1, 1, 1)},
                         {{1, 4, 6, 6}, {6, 2, 1, 1}, conv_params(2, 2, 0, 0, 1, 1, 2)}};

// Runs every direction of every layer on `dev`; returns their keys.
std::vector<ops::ConvKey> run_layers(Device dev) {
  std::vector<ops::ConvKey> keys;
  for (const Layer& l : kLayers) {
    const Tensor x = ones(l.x).to(dev), w = ones(l.w).to(dev);
    const Tensor y = ops::conv2d(x, w, Tensor(), l.p);
    ops::conv2d_backward_data(y, w, l.x, l.p);
    ops::conv2d_backward_filter(y, x, l.w, l.p);
    for (ConvDirection d :
         {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter})
      keys.push_back(ops::conv2d_key(d, l.x, l.w, kFloat32, dev, l.p));
  }
  return keys;
}

std::map<std::string, std::string> choices(const std::vector<ops::ConvKey>& keys) {
  std::map<std::string, std::string> out;
  for (const ops::ConvKey& k : keys)
    out[ops::conv_key_string(k)] = ops::explain_conv_algos(k).chosen;
  return out;
}

void expect_format_error(const std::string& path, std::initializer_list<std::string> parts) {
  try {
    ops::load_conv_cache(path);
    FAIL("expected a FormatError for " << path);
  } catch (const FormatError& e) {
    check_message(e.what(), {path});
    check_message(e.what(), parts);
  }
}

}  // namespace

TEST_CASE("conv2d cache: save, clear, load gives the same choices without timing") {
  ConvPolicyGuard guard;
  ops::clear_conv_algo_cache();
  ops::set_conv_benchmark(true);
  std::vector<ops::ConvKey> keys = run_layers(kCPU);
  for (const ops::ConvKey& k : run_layers(kEmu0)) keys.push_back(k);
  const auto before = choices(keys);
  const std::string path = temp_path("roundtrip");
  CHECK(ops::save_conv_cache(path) == keys.size());
  const json doc = json::parse(read_text(path));
  CHECK(doc["format"] == "ember-conv-cache");
  CHECK(doc["format_version"] == 1);
  CHECK(doc["devices"].contains("cpu"));
  CHECK(doc["devices"]["emu:0"] == "Ember SIMT emulator");
  CHECK(doc["entries"].size() == keys.size());

  ops::clear_conv_algo_cache();
  CHECK(ops::explain_conv_algos(keys[0]).source.empty());  // forgotten: not timed yet
  const ops::ConvBenchmarkStats s0 = ops::conv_benchmark_stats();
  CHECK(ops::load_conv_cache(path) == keys.size());
  CHECK(choices(keys) == before);
  for (const ops::ConvKey& k : keys)
    check_message(ops::explain_conv_algos(k).source, {"loaded from " + path});
  run_layers(kCPU);
  run_layers(kEmu0);
  const ops::ConvBenchmarkStats s1 = ops::conv_benchmark_stats();
  CHECK(s1.keys_timed == s0.keys_timed);
  CHECK(s1.cache_hits == s0.cache_hits + static_cast<int64_t>(keys.size()));
  CHECK(s1.entries_loaded == s0.entries_loaded + static_cast<int64_t>(keys.size()));

  // An entry whose key no longer reads back as itself is ignored, the others taken.
  json edited = doc;
  edited["entries"][0]["key_string"] = "forward float32 cpu N999";
  const std::string stale = temp_path("stale_entry");
  write_text(stale, with_checksum(edited));
  ops::clear_conv_algo_cache();
  CHECK(ops::load_conv_cache(stale) == keys.size() - 1);
  std::remove(path.c_str());
  std::remove(stale.c_str());
}

TEST_CASE("conv2d cache: a bad file is a FormatError naming the file and the reason") {
  ConvPolicyGuard guard;
  ops::clear_conv_algo_cache();
  ops::set_conv_benchmark(true);
  const std::vector<ops::ConvKey> keys = run_layers(kCPU);
  const std::string good = temp_path("good");
  ops::save_conv_cache(good);
  const std::string text = read_text(good);
  const json doc = json::parse(text);
  ops::clear_conv_algo_cache();

  const std::string bad = temp_path("bad");
  auto variant = [&](const std::string& contents, std::initializer_list<std::string> parts) {
    write_text(bad, contents);
    expect_format_error(bad, parts);
    CHECK(ops::explain_conv_algos(keys[0]).source.empty());  // nothing was taken
  };
  variant("hello, world", {"not valid JSON"});
  variant("", {"not valid JSON"});
  variant(text.substr(0, text.size() / 2), {"not valid JSON", "truncated"});
  variant("[1, 2, 3]", {"not a JSON object"});
  variant(R"({"format": "something else"})", {"not an Ember convolution cache"});
  json v = doc;
  v["entries"][0]["timed"][0]["median_ms"] = 1e-9;  // edited, checksum left as it was
  variant(v.dump(1), {"checksum mismatch"});
  v = doc;
  v["checksum"] = "fnv1a64:0000000000000000";
  variant(v.dump(1), {"checksum mismatch"});
  v = doc;
  v["format_version"] = 2;
  variant(with_checksum(v), {"format version 2"});
  v = doc;
  v["ember_version"] = "0.0.1";
  variant(with_checksum(v), {"written by Ember 0.0.1"});
  v = doc;
  v["devices"]["cpu"] = "A CPU from elsewhere, 64 threads";
  variant(with_checksum(v), {"measured on cpu 'A CPU from elsewhere, 64 threads'"});
  v = doc;
  v["devices"]["cuda:7"] = "NVIDIA H100";
  variant(with_checksum(v), {"cuda:7", "not usable here"});
  v = doc;
  v["algorithms"].push_back("winograd_from_elsewhere");
  variant(with_checksum(v), {"algorithms", "winograd_from_elsewhere"});
  v = doc;
  v["entries"][0]["timed"][0]["name"] = "no_such_algo";
  variant(with_checksum(v), {"unknown algorithm 'no_such_algo'"});
  v = doc;
  v["entries"][0]["timed"][0]["median_ms"] = -1;
  variant(with_checksum(v), {"median_ms"});
  v = doc;
  v["entries"][0].erase("key");
  variant(with_checksum(v), {"entry 0", "\"key\""});

  // The same file is refused once the algorithm set changes (an algorithm registered since).
  int runs = 0;
  {
    ScopedAlgo extra(std::make_shared<const RefusingAlgo>(
        "test_extra", RefusingAlgo::Throws::not_supported, true, 0, &runs));
    expect_format_error(good, {"test_extra"});
  }
  CHECK(ops::load_conv_cache(good) == keys.size());  // and taken again once it is gone
  CHECK_THROWS_AS(ops::load_conv_cache(temp_path("missing")), IOError);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST_CASE("conv2d cache: EMBER_CONV_CACHE is loaded on first use and written after new entries") {
  ConvPolicyGuard guard;
  ops::clear_conv_algo_cache();
  ops::set_conv_benchmark(true);
  const std::string path = temp_path("env");
  setenv("EMBER_CONV_CACHE", path.c_str(), 1);
  const ops::ConvBenchmarkStats s0 = ops::conv_benchmark_stats();
  const std::vector<ops::ConvKey> keys = run_layers(kCPU);  // no file yet: timed, then written
  CHECK(ops::conv_benchmark_stats().keys_timed ==
        s0.keys_timed + static_cast<int64_t>(keys.size()));
  CHECK(json::parse(read_text(path))["entries"].size() == keys.size());
  const auto before = choices(keys);

  // A new process would start here: nothing in memory, the file read at the first convolution.
  ops::clear_conv_algo_cache();
  const ops::ConvBenchmarkStats s1 = ops::conv_benchmark_stats();
  run_layers(kCPU);
  CHECK(ops::conv_benchmark_stats().keys_timed == s1.keys_timed);
  CHECK(choices(keys) == before);
  check_message(ops::explain_conv_algos(keys[0]).source, {"loaded from " + path});

  // A garbage file: the run goes on with an empty cache, says so on stderr once, and the file
  // (not an Ember cache) is left as it is.
  const std::string garbage = temp_path("env_garbage");
  write_text(garbage, "not a cache");
  setenv("EMBER_CONV_CACHE", garbage.c_str(), 1);
  ops::clear_conv_algo_cache();
  std::string err;
  {
    CaptureStderr capture;
    run_layers(kCPU);
    ops::clear_conv_algo_cache();
    run_layers(kCPU);
    err = capture.str();
  }
  check_message(err, {"EMBER_CONV_CACHE", garbage, "not valid JSON", "empty convolution cache"});
  CHECK(err.find(garbage) == err.rfind(garbage));  // once
  CHECK(read_text(garbage) == "not a cache");

  // A foreign Ember cache (another machine's cpu): reported, then replaced by this machine's.
  json foreign = json::parse(read_text(path));
  foreign["devices"]["cpu"] = "A CPU from elsewhere, 64 threads";
  write_text(path, with_checksum(foreign));
  setenv("EMBER_CONV_CACHE", path.c_str(), 1);
  ops::clear_conv_algo_cache();
  {
    CaptureStderr capture;
    const ops::ConvBenchmarkStats s2 = ops::conv_benchmark_stats();
    run_layers(kCPU);
    CHECK(ops::conv_benchmark_stats().keys_timed > s2.keys_timed);
    check_message(capture.str(), {path, "A CPU from elsewhere", "will be replaced"});
  }
  unsetenv("EMBER_CONV_CACHE");
  ops::clear_conv_algo_cache();
  CHECK(ops::load_conv_cache(path) == keys.size());
  std::remove(path.c_str());
  std::remove(garbage.c_str());
}

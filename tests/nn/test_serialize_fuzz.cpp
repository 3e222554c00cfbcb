// Fuzz-style robustness of the safetensors reader: seeded random mutations of a valid file
// (truncations, byte flips and digit edits in the header, changed length fields, flipped data
// bytes) must either load into consistent tensors or raise FormatError, nothing else. Run under
// the ASan+UBSan build this also shows that no mutation reads out of bounds.
//
// EMBER_FUZZ_ITERS overrides the number of mutations (default 4000), EMBER_FUZZ_SEED the seed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <set>

#include "nn/serialize.h"
#include "nn_test_util.h"

using namespace ember;

namespace {

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

std::string valid_file() {
  NamedTensors t{
      {"weight", from_vector<float>({1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1.0f}, {2, 3})},
      {"bias", from_vector<double>({0.5, -0.25})},
      {"steps", full({}, 12345, kInt64)},
      {"mask", from_vector<bool>({true, false, true})},
      {"half", full({2, 2}, 0.75, kFloat16)},
      {"bf", full({3}, -4.0, kBFloat16)},
      {"ids", from_vector<int32_t>({1, -2, 3})},
      {"pix", from_vector<uint8_t>({0, 255, 17, 4})},
      {"nothing", empty({0, 3})},
  };
  return serialize_safetensors(t, {{"format", "pt"}, {"epoch", "3"}});
}

// What a successful load must satisfy whatever the bytes were.
void check_consistent(const SafetensorsFile& f, size_t file_size) {
  std::set<std::string> names;
  uint64_t bytes = 0;
  for (const auto& [name, t] : f.tensors) {
    CHECK(names.insert(name).second);
    REQUIRE(t.defined());
    CHECK(t.is_contiguous());
    CHECK(t.numel() == checked_numel(t.shape()));
    bytes += static_cast<uint64_t>(t.numel()) * t.element_size();
    if (t.dtype() == kBool && t.numel() > 0) {
      const uint8_t* b = static_cast<const uint8_t*>(t.data_ptr());
      for (int64_t i = 0; i < t.numel(); ++i) CHECK(b[i] <= 1);
    }
  }
  CHECK(bytes < file_size);
  // A loaded file writes back and reloads to the same tensors.
  std::string again = serialize_safetensors(f.tensors, f.metadata);
  SafetensorsFile g = deserialize_safetensors(again.data(), again.size(), "rewrite");
  REQUIRE(g.tensors.size() == f.tensors.size());
  CHECK(g.metadata == f.metadata);
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    CHECK(g.tensors[i].first == f.tensors[i].first);
    CHECK(g.tensors[i].second.shape() == f.tensors[i].second.shape());
  }
}

std::string mutate(const std::string& base, std::mt19937_64& rng) {
  std::string s = base;
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(s[i]);
  auto pick = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  size_t header_end = static_cast<size_t>(8 + header_len);
  int rounds = 1 + static_cast<int>(pick(3));
  for (int r = 0; r < rounds; ++r) {
    switch (pick(8)) {
      case 0:  // truncate anywhere
        s.resize(pick(s.size() + 1));
        break;
      case 1:  // random byte in the header
        if (s.size() > 8) s[8 + pick(std::min(s.size(), header_end) - 8)] = char(rng());
        break;
      case 2: {  // replace a digit in the header with another digit, or a digit with '-'
        std::vector<size_t> digits;
        for (size_t i = 8; i < std::min(s.size(), header_end); ++i)
          if (s[i] >= '0' && s[i] <= '9') digits.push_back(i);
        if (!digits.empty()) s[digits[pick(digits.size())]] = "0123456789-9"[pick(12)];
        break;
      }
      case 3:  // length field: small change
        if (s.size() >= 8) s[0] = char(uint8_t(s[0]) + int(pick(17)) - 8);
        break;
      case 4:  // length field: a random high byte
        if (s.size() >= 8) s[1 + pick(7)] = char(rng());
        break;
      case 5:  // flip a bit in the data
        if (s.size() > header_end)
          s[header_end + pick(s.size() - header_end)] ^= char(1u << pick(8));
        break;
      case 6:  // delete a header byte
        if (s.size() > 9) s.erase(8 + pick(std::min(s.size(), header_end) - 8), 1);
        break;
      default:  // insert a structural character into the header
        if (s.size() > 8)
          s.insert(8 + pick(std::min(s.size(), header_end) - 8), 1, "{}[]\",:0 "[pick(9)]);
        break;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("safetensors reader survives seeded random mutations") {
  const std::string base = valid_file();
  const uint64_t iters = env_or("EMBER_FUZZ_ITERS", 4000);
  const uint64_t seed = env_or("EMBER_FUZZ_SEED", 20240611);
  std::mt19937_64 rng(seed);
  ember_test::TempDir dir;
  const std::string path = dir.file("fuzz.safetensors");
  uint64_t loaded = 0, rejected = 0;
  for (uint64_t it = 0; it < iters; ++it) {
    std::string bytes = mutate(base, rng);
    bool via_file = it % 8 == 0;
    INFO("iteration ", it, " of seed ", seed, " (", bytes.size(), " bytes, ",
         via_file ? "file" : "memory", ")");
    try {
      SafetensorsFile f;
      if (via_file) {
        ember_test::write_bytes(path, bytes);
        f = load_safetensors(path);
      } else {
        f = deserialize_safetensors(bytes.data(), bytes.size(), "fuzz");
      }
      ++loaded;
      check_consistent(f, bytes.size());
    } catch (const FormatError&) {
      ++rejected;
    } catch (const std::exception& e) {
      FAIL("unexpected exception: ", e.what());
    }
  }
  MESSAGE("safetensors fuzz: ", loaded, " loaded, ", rejected, " rejected of ", iters);
  CHECK(loaded + rejected == iters);
  CHECK(rejected > iters / 2);  // most mutations break the file
  CHECK(loaded > 0);            // data flips and harmless edits still load
}

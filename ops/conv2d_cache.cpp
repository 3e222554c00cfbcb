// The benchmark cache file: JSON of a versioned format with a checksum, written and read strictly
// (docs/conv.md, "The cache file"). Nothing in a file is trusted until the whole of it has been
// checked: a bad file is refused as a whole, with the reason.
#include "ops/conv2d_benchmark.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ember/build_config.h"
#include "runtime/env.h"
#include "runtime/gpu.h"

namespace ember::ops {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "ember-conv-cache";
constexpr int kFormatVersion = 1;

// FNV-1a, 64 bits, over the compact dump of the document without its "checksum" field: it
// catches truncation and edits, not tampering (the file is a cache, not a credential).
std::string checksum_of(const json& doc) {
  const std::string text = doc.dump();
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

const char* math_name(ConvMathMode m) {
  const char* names[] = {"fp32", "tf32", "tensor_op"};
  return names[static_cast<int>(m)];
}
const char* layout_name(ConvLayout l) {
  return l == ConvLayout::nchw ? "nchw" : "nhwc";
}

json key_json(const ConvKey& k) {
  const kernels::ConvShape& s = k.shape;
  return json{{"device", k.device().str()},
              {"dtype", dtype_name(k.dtype)},
              {"math", math_name(k.math)},
              {"layout", layout_name(k.layout)},
              {"direction", conv_direction_name(k.direction)},
              {"deterministic", k.deterministic != 0},
              {"input", {s.n, s.c, s.h, s.w}},
              {"filter", {s.k, s.r, s.s}},
              {"output", {s.oh, s.ow}},
              {"stride", {s.stride_h, s.stride_w}},
              {"padding", {s.pad_h, s.pad_w}},
              {"dilation", {s.dil_h, s.dil_w}},
              {"groups", s.groups}};
}

// Reads fields of a parsed document, each one checked; any surprise is a FormatError.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& why) const {
    EMBER_THROW(FormatError, "conv cache ", path_, ": ", why);
  }
  const json& field(const json& obj, const char* name, const std::string& where) const {
    if (!obj.is_object()) fail(where + " is not an object");
    auto it = obj.find(name);
    if (it == obj.end()) fail(where + " has no \"" + name + "\"");
    return *it;
  }
  std::string str(const json& obj, const char* name, const std::string& where) const {
    const json& v = field(obj, name, where);
    if (!v.is_string()) fail(where + ": \"" + name + "\" is not a string");
    return v.get<std::string>();
  }
  int64_t integer(const json& v, const std::string& what) const {
    if (!v.is_number_integer()) fail(what + " is not an integer");
    return v.get<int64_t>();
  }
  std::vector<int64_t> ints(const json& obj, const char* name, size_t n,
                            const std::string& where) const {
    const json& v = field(obj, name, where);
    if (!v.is_array() || v.size() != n)
      fail(where + ": \"" + name + "\" is not an array of " + std::to_string(n) + " integers");
    std::vector<int64_t> out;
    for (const json& e : v) out.push_back(integer(e, where + ": \"" + name + "\""));
    return out;
  }

 private:
  std::string path_;
};

// The key an entry describes, or false when a field names something this build does not know
// (the entry is then ignored, as one whose key no longer matches).
bool parse_key(const Reader& rd, const json& j, const std::string& where, ConvKey* out) {
  ConvKey k;
  std::memset(static_cast<void*>(&k), 0, sizeof k);  // Note [ConvKey bytes]
  try {
    const Device dev = Device::parse(rd.str(j, "device", where));
    k.device_type = dev.type;
    k.device_index = static_cast<int16_t>(dev.is_cpu() ? 0 : dev.index);
    k.dtype = parse_dtype(rd.str(j, "dtype", where));
  } catch (const FormatError&) {
    throw;
  } catch (const Error&) {
    return false;
  }
  const std::string math = rd.str(j, "math", where), layout = rd.str(j, "layout", where);
  const std::string dir = rd.str(j, "direction", where);
  bool found = false;
  for (ConvMathMode m : {ConvMathMode::fp32, ConvMathMode::tf32, ConvMathMode::tensor_op})
    if (math == math_name(m)) k.math = m, found = true;
  if (!found) return false;
  if (layout != "nchw" && layout != "nhwc") return false;
  k.layout = layout == "nchw" ? ConvLayout::nchw : ConvLayout::nhwc;
  found = false;
  for (ConvDirection d :
       {ConvDirection::forward, ConvDirection::backward_data, ConvDirection::backward_filter})
    if (dir == conv_direction_name(d)) k.direction = d, found = true;
  if (!found) return false;
  const json& det = rd.field(j, "deterministic", where);
  if (!det.is_boolean()) rd.fail(where + ": \"deterministic\" is not true or false");
  k.deterministic = det.get<bool>() ? 1 : 0;
  kernels::ConvShape& s = k.shape;
  const auto in = rd.ints(j, "input", 4, where), f = rd.ints(j, "filter", 3, where);
  const auto o = rd.ints(j, "output", 2, where), st = rd.ints(j, "stride", 2, where);
  const auto pd = rd.ints(j, "padding", 2, where), dl = rd.ints(j, "dilation", 2, where);
  s.n = in[0], s.c = in[1], s.h = in[2], s.w = in[3];
  s.k = f[0], s.r = f[1], s.s = f[2];
  s.oh = o[0], s.ow = o[1];
  s.stride_h = st[0], s.stride_w = st[1];
  s.pad_h = pd[0], s.pad_w = pd[1];
  s.dil_h = dl[0], s.dil_w = dl[1];
  s.groups = rd.integer(rd.field(j, "groups", where), where + ": \"groups\"");
  // A key that does not describe a valid convolution (its output size disagrees with its
  // geometry, or a size is out of range) is one this build would never make: ignored.
  const int64_t g = s.groups;
  if (s.n < 0 || s.c < 1 || s.h < 1 || s.w < 1 || s.k < 1 || s.r < 1 || s.s < 1 || g < 1 ||
      s.c % g != 0 || s.k % g != 0 || s.stride_h < 1 || s.stride_w < 1 || s.pad_h < 0 ||
      s.pad_w < 0 || s.dil_h < 1 || s.dil_w < 1)
    return false;
  const int64_t oh = (s.h + 2 * s.pad_h - s.dil_h * (s.r - 1) - 1) / s.stride_h + 1;
  const int64_t ow = (s.w + 2 * s.pad_w - s.dil_w * (s.s - 1) - 1) / s.stride_w + 1;
  if (oh != s.oh || ow != s.ow || oh < 1 || ow < 1) return false;
  *out = k;
  return true;
}

}  // namespace

std::string conv_device_name(Device d) {
  if (d.is_cpu())
    return cpu_model_name() + ", " + std::to_string(omp_get_max_threads()) + " threads";
  gpu::require_device(d);
  return gpu::backend(d).properties(d.index).name;
}

std::string conv_cache_text(const std::vector<ConvBenchEntry>& entries,
                            const std::vector<std::string>& algos) {
  json doc;
  doc["format"] = kFormat;
  doc["format_version"] = kFormatVersion;
  doc["ember_version"] = EMBER_VERSION_STRING;
  std::vector<std::string> sorted = algos;
  std::sort(sorted.begin(), sorted.end());
  doc["algorithms"] = sorted;
  json devices = json::object();
  json list = json::array();
  for (const ConvBenchEntry& e : entries) {
    const std::string dev = e.key.device().str();
    if (!devices.contains(dev)) devices[dev] = conv_device_name(e.key.device());
    json times = json::array();
    for (const ConvMeasurement& m : e.timed)
      times.push_back({{"name", m.name}, {"median_ms", m.median_ms}});
    list.push_back(
        {{"key", key_json(e.key)}, {"key_string", conv_key_string(e.key)}, {"timed", times}});
  }
  doc["devices"] = devices;
  doc["entries"] = list;
  doc["checksum"] = checksum_of(doc);
  return doc.dump(1) + "\n";
}

void parse_conv_cache(const std::string& text, const std::string& path,
                      const std::vector<std::string>& algos, ConvCacheParse* out) {
  *out = ConvCacheParse{};
  const Reader rd(path);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    rd.fail(std::string("not valid JSON (garbage or truncated): ") + e.what());
  }
  if (!doc.is_object()) rd.fail("not a JSON object");
  if (!doc.contains("format") || doc["format"] != kFormat)
    rd.fail(std::string("not an Ember convolution cache (no \"format\": \"") + kFormat + "\")");
  out->recognised = true;
  const json& version = rd.field(doc, "format_version", "the file");
  if (!version.is_number_integer() || version.get<int64_t>() != kFormatVersion)
    rd.fail("format version " + version.dump() + ", this build reads version " +
            std::to_string(kFormatVersion));
  const std::string sum = rd.str(doc, "checksum", "the file");
  json body = doc;
  body.erase("checksum");
  if (checksum_of(body) != sum)
    rd.fail("checksum mismatch (the file was changed or cut short after it was written)");
  const std::string ember = rd.str(doc, "ember_version", "the file");
  if (ember != EMBER_VERSION_STRING)
    rd.fail("written by Ember " + ember + ", this is Ember " + EMBER_VERSION_STRING);
  std::vector<std::string> have = algos, theirs;
  std::sort(have.begin(), have.end());
  const json& names = rd.field(doc, "algorithms", "the file");
  if (!names.is_array()) rd.fail("\"algorithms\" is not an array");
  for (const json& n : names) {
    if (!n.is_string()) rd.fail("\"algorithms\" holds a non-string");
    theirs.push_back(n.get<std::string>());
  }
  std::sort(theirs.begin(), theirs.end());
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& n : v) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  if (theirs != have)
    rd.fail("made with the algorithms {" + join(theirs) + "}, these are {" + join(have) + "}");
  const json& devices = rd.field(doc, "devices", "the file");
  if (!devices.is_object()) rd.fail("\"devices\" is not an object");
  for (auto it = devices.begin(); it != devices.end(); ++it) {
    if (!it.value().is_string()) rd.fail("device " + it.key() + " has no name");
    std::string here;
    try {
      here = conv_device_name(Device::parse(it.key()));
    } catch (const Error& e) {
      rd.fail("measured on " + it.key() + " (" + it.value().get<std::string>() +
              "), which is not usable here: " + e.what());
    }
    if (here != it.value().get<std::string>())
      rd.fail("measured on " + it.key() + " '" + it.value().get<std::string>() + "', this " +
              it.key() + " is '" + here + "'");
  }
  const json& entries = rd.field(doc, "entries", "the file");
  if (!entries.is_array()) rd.fail("\"entries\" is not an array");
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = "entry " + std::to_string(i);
    const json& e = entries[i];
    ConvBenchEntry entry;
    const bool key_ok = parse_key(rd, rd.field(e, "key", where), where + " key", &entry.key);
    const std::string key_string = rd.str(e, "key_string", where);
    const json& timed = rd.field(e, "timed", where);
    if (!timed.is_array()) rd.fail(where + ": \"timed\" is not an array");
    for (const json& t : timed) {
      ConvMeasurement m;
      m.name = rd.str(t, "name", where + " timing");
      const json& ms = rd.field(t, "median_ms", where + " timing");
      if (!ms.is_number() || !std::isfinite(ms.get<double>()) || ms.get<double>() < 0)
        rd.fail(where + ": \"median_ms\" is not a finite time >= 0");
      m.median_ms = ms.get<double>();
      if (!std::binary_search(have.begin(), have.end(), m.name))
        rd.fail(where + ": unknown algorithm '" + m.name + "'");
      entry.timed.push_back(std::move(m));
    }
    // The key's own text must read back the same: a key whose fields changed meaning (another
    // build's layout of ConvKey) is ignored, never used for a different convolution.
    if (!key_ok || conv_key_string(entry.key) != key_string || entry.timed.empty()) {
      ++out->ignored;
      continue;
    }
    if (!devices.contains(entry.key.device().str()))
      rd.fail(where + ": device " + entry.key.device().str() + " is not in \"devices\"");
    entry.source = "loaded from " + path;
    out->entries.push_back(std::move(entry));
  }
}

std::string read_conv_cache_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK_T(IOError, f.good(), "conv cache ", path, ": cannot open it for reading");
  std::ostringstream os;
  os << f.rdbuf();
  EMBER_CHECK_T(IOError, !f.bad(), "conv cache ", path, ": read error");
  return os.str();
}

void write_conv_cache_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    EMBER_CHECK_T(IOError, f.good(), "conv cache ", path, ": cannot write ", tmp);
    f << text;
    f.flush();
    EMBER_CHECK_T(IOError, f.good(), "conv cache ", path, ": write error on ", tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    EMBER_THROW(IOError, "conv cache ", path, ": cannot rename ", tmp, " over it");
  }
}

}  // namespace ember::ops

// safetensors: the writer (compact header in the reference implementation's key order, atomic
// file replacement) and the validating reader.
#include "nn/serialize.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

namespace ember {
namespace {

using json = nlohmann::json;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader assumes a little-endian host"
#endif

const char* st_dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "F32";
    case DType::f64:
      return "F64";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::i32:
      return "I32";
    case DType::i64:
      return "I64";
    case DType::u8:
      return "U8";
    case DType::b8:
      return "BOOL";
  }
  return "?";
}

bool parse_st_dtype(const std::string& s, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    if (s == st_dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

// A JSON string literal for `s`; ValueError if `s` is not valid UTF-8.
std::string quoted(const std::string& s, const char* what) {
  try {
    return json(s).dump();
  } catch (const json::exception&) {
    EMBER_THROW(ValueError, "save_safetensors: ", what, " is not valid UTF-8: '", s, "'");
  }
}

// The header (padded) and the contiguous CPU tensors whose bytes follow it, in order.
struct Prepared {
  std::string header;  // including the 8-byte length prefix
  std::vector<Tensor> tensors;
};

Prepared prepare(const NamedTensors& tensors, const Metadata& metadata) {
  Prepared p;
  std::set<std::string> seen;
  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) h += ',';
      first = false;
      h += quoted(k, "metadata key") + ':' + quoted(v, "metadata value");
    }
    h += '}';
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    EMBER_CHECK_VALUE(t.defined(), "save_safetensors: tensor '", name, "' is undefined");
    EMBER_CHECK_VALUE(name != "__metadata__",
                      "save_safetensors: '__metadata__' is reserved and cannot name a tensor");
    EMBER_CHECK_VALUE(seen.insert(name).second, "save_safetensors: duplicate tensor name '", name,
                      "'");
    Tensor c = t.cpu().contiguous();
    uint64_t nbytes = static_cast<uint64_t>(c.numel()) * c.element_size();
    if (h.size() > 1) h += ',';
    h += quoted(name, "tensor name") + ":{\"dtype\":\"" + st_dtype_name(c.dtype()) +
         "\",\"shape\":[";
    for (size_t d = 0; d < c.shape().size(); ++d) {
      if (d) h += ',';
      h += std::to_string(c.shape()[d]);
    }
    h += "],\"data_offsets\":[" + std::to_string(offset) + ',' + std::to_string(offset + nbytes) +
         "]}";
    offset += nbytes;
    p.tensors.push_back(std::move(c));
  }
  h += '}';
  h.append((8 - h.size() % 8) % 8, ' ');
  uint64_t n = h.size();
  p.header.resize(8);
  for (int i = 0; i < 8; ++i) p.header[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  p.header += h;
  return p;
}

// --- Reading -----------------------------------------------------------------------------------

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

struct Header {
  std::vector<Entry> entries;  // sorted by data offset
  Metadata metadata;
};

#define BAD(...) EMBER_THROW(FormatError, source, ": ", __VA_ARGS__)

uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Parses JSON, rejecting a key repeated within one object (nlohmann would keep the last).
json parse_json_no_duplicates(const char* p, size_t n, const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(p, p + n, callback);
  } catch (const json::exception& e) {
    BAD("header is not valid JSON (", e.what(), ")");
  }
  if (!duplicate.empty()) BAD("header has the key '", duplicate, "' more than once");
  return j;
}

Header parse_header(const char* p, size_t n, uint64_t data_size, const std::string& source) {
  if (n == 0 || p[0] != '{') BAD("header does not start with '{'");
  json j = parse_json_no_duplicates(p, n, source);
  if (!j.is_object()) BAD("header is not a JSON object");
  Header h;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) BAD("__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) BAD("__metadata__ value of '", m.key(), "' is not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) BAD("entry '", name, "' is not an object");
    for (auto f = v.begin(); f != v.end(); ++f) {
      if (f.key() != "dtype" && f.key() != "shape" && f.key() != "data_offsets")
        BAD("entry '", name, "' has an unexpected key '", f.key(), "'");
    }
    for (const char* k : {"dtype", "shape", "data_offsets"})
      if (!v.contains(k)) BAD("entry '", name, "' has no '", k, "'");
    Entry e;
    e.name = name;
    const json& dt = v["dtype"];
    if (!dt.is_string()) BAD("entry '", name, "': dtype is not a string");
    if (!parse_st_dtype(dt.get<std::string>(), &e.dtype))
      BAD("entry '", name, "': unsupported dtype '", dt.get<std::string>(),
          "' (expected F32, F64, F16, BF16, I32, I64, U8 or BOOL)");
    const json& sh = v["shape"];
    if (!sh.is_array()) BAD("entry '", name, "': shape is not an array");
    uint64_t nbytes = itemsize(e.dtype);
    for (const json& s : sh) {
      if (s.is_number_integer() && !s.is_number_unsigned())
        BAD("entry '", name, "': shape has a negative size ", s.get<int64_t>());
      if (!s.is_number_unsigned())
        BAD("entry '", name, "': shape has a non-integer size ", s.dump());
      uint64_t d = s.get<uint64_t>();
      if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_mul_overflow(nbytes, d, &nbytes))
        BAD("entry '", name, "': shape ", sh.dump(), " overflows the byte count");
      e.shape.push_back(static_cast<int64_t>(d));
    }
    const json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      BAD("entry '", name, "': data_offsets is not a pair of non-negative integers");
    e.begin = off[0].get<uint64_t>();
    e.end = off[1].get<uint64_t>();
    if (e.begin > e.end)
      BAD("entry '", name, "': data_offsets [", e.begin, ", ", e.end, "] end before they begin");
    if (e.end > data_size)
      BAD("entry '", name, "': data_offsets [", e.begin, ", ", e.end,
          "] lie outside the data buffer of ", data_size, " bytes");
    if (e.end - e.begin != nbytes)
      BAD("entry '", name, "': data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin,
          " bytes but ", st_dtype_name(e.dtype), " shape ", sh.dump(), " needs ", nbytes);
    h.entries.push_back(std::move(e));
  }
  std::sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  for (const Entry& e : h.entries) {
    if (e.begin < covered) BAD("entry '", e.name, "' overlaps the tensor before it");
    if (e.begin > covered)
      BAD("bytes [", covered, ", ", e.begin, ") of the data buffer belong to no tensor");
    covered = e.end;
  }
  if (covered != data_size)
    BAD("bytes [", covered, ", ", data_size, ") of the data buffer belong to no tensor");
  return h;
}

// Checks the 8-byte prefix against the total size; returns the header length.
uint64_t check_prefix(const unsigned char* prefix, uint64_t total, const std::string& source) {
  uint64_t n = read_le64(prefix);
  if (n > kSafetensorsMaxHeader)
    BAD("header length ", n, " exceeds the limit of ", kSafetensorsMaxHeader, " bytes");
  if (n > total - 8) BAD("header length ", n, " runs past the end of the file (", total, " bytes)");
  return n;
}

void check_bool_bytes(const Tensor& t, const std::string& source, const std::string& name) {
  if (t.dtype() != kBool || t.numel() == 0) return;
  const unsigned char* b = static_cast<const unsigned char*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i)
    if (b[i] > 1) BAD("entry '", name, "': BOOL element ", i, " is ", int(b[i]), ", not 0 or 1");
}

// Reads exactly `n` bytes; false on a short read.
bool read_exact(std::FILE* f, void* dst, size_t n) {
  return std::fread(dst, 1, n, f) == n;
}

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

const Tensor& SafetensorsFile::at(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  std::string names;
  for (const auto& [n, t] : tensors) names += (names.empty() ? "" : ", ") + n;
  EMBER_THROW(IndexError, "safetensors: no tensor named '", name, "' (have: ", names, ")");
}

bool SafetensorsFile::contains(const std::string& name) const {
  for (const auto& nt : tensors)
    if (nt.first == name) return true;
  return false;
}

std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata) {
  Prepared p = prepare(tensors, metadata);
  std::string out = std::move(p.header);
  for (const Tensor& t : p.tensors)
    if (t.numel() > 0)
      out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
  Prepared p = prepare(tensors, metadata);
  static std::atomic<uint64_t> counter{0};
  std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    EMBER_THROW(IOError, "save_safetensors: cannot create '", tmp, "' to write '", path,
                "': ", errno_text());
  auto fail = [&](const char* step) {
    std::string err = errno_text();
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    EMBER_THROW(IOError, "save_safetensors: ", step, " '", tmp, "' (for '", path, "'): ", err);
  };
  auto write_all = [&](const void* data, size_t n) {
    const char* c = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd, c, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail("cannot write");
      c += w;
      n -= static_cast<size_t>(w);
    }
  };
  write_all(p.header.data(), p.header.size());
  for (const Tensor& t : p.tensors)
    if (t.numel() > 0) write_all(t.data_ptr(), t.numel() * t.element_size());
  if (::fsync(fd) != 0) fail("cannot fsync");
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0) fail("cannot close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename");
  // Make the rename itself durable; a failure here leaves a complete file in place.
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/') + 1);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

SafetensorsFile deserialize_safetensors(const void* data, size_t size, const std::string& source) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  if (size < 8) BAD("file is ", size, " bytes, shorter than the 8-byte header length");
  uint64_t n = check_prefix(p, size, source);
  Header h = parse_header(reinterpret_cast<const char*>(p + 8), n, size - 8 - n, source);
  const unsigned char* buffer = p + 8 + n;
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  for (const Entry& e : h.entries) {
    Tensor t = empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.data_ptr(), buffer + e.begin, e.end - e.begin);
    check_bool_bytes(t, source, e.name);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

SafetensorsFile load_safetensors(const std::string& path) {
  const std::string& source = path;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) EMBER_THROW(IOError, "load_safetensors: cannot open '", path, "': ", errno_text());
  struct stat st;
  if (::fstat(::fileno(f.get()), &st) != 0)
    EMBER_THROW(IOError, "load_safetensors: cannot stat '", path, "': ", errno_text());
  if (!S_ISREG(st.st_mode)) EMBER_THROW(IOError, "load_safetensors: '", path, "' is not a file");
  uint64_t total = static_cast<uint64_t>(st.st_size);
  if (total < 8) BAD("file is ", total, " bytes, shorter than the 8-byte header length");
  unsigned char prefix[8];
  auto short_read = [&] {
    EMBER_THROW(IOError, "load_safetensors: cannot read '", path, "' (",
                std::ferror(f.get()) ? errno_text() : "the file shrank while reading", ")");
  };
  if (!read_exact(f.get(), prefix, 8)) short_read();
  uint64_t n = check_prefix(prefix, total, source);
  std::string header(n, '\0');
  if (!read_exact(f.get(), header.data(), n)) short_read();
  Header h = parse_header(header.data(), n, total - 8 - n, source);
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  // Entries are sorted and cover the buffer without gaps, so they are read in one pass.
  for (const Entry& e : h.entries) {
    Tensor t = empty(e.shape, e.dtype);
    if (e.end > e.begin && !read_exact(f.get(), t.data_ptr(), e.end - e.begin)) short_read();
    check_bool_bytes(t, source, e.name);
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace ember

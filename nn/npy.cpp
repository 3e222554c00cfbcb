// The .npy reader and writer (nn/npy.h). The header is a Python dict literal:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// read here by a small scanner for exactly those three keys; nothing in it is evaluated.
#include "nn/npy.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "autograd/copy.h"
#include "autograd/shape.h"
#include "runtime/error.h"

namespace ember {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMaxHeader = 1 << 20;

struct DescrName {
  const char* descr;
  DType dtype;
};
// '<' little-endian, '|' no byte order (one-byte types), '=' native (little-endian here).
constexpr DescrName kDescrs[] = {{"f4", kFloat32}, {"f8", kFloat64}, {"f2", kFloat16},
                                 {"i4", kInt32},   {"i8", kInt64},   {"u1", kUInt8},
                                 {"b1", kBool}};

std::string descr_of(DType t) {
  for (const auto& d : kDescrs)
    if (d.dtype == t) return (itemsize(t) == 1 ? "|" : "<") + std::string(d.descr);
  EMBER_THROW(DTypeError, "npy: ", dtype_name(t), " has no NumPy dtype that Ember writes");
}

// The text after `'key':` in the header, or FormatError.
size_t value_pos(const std::string& h, const char* key, const std::string& source) {
  const std::string k = std::string("'") + key + "'";
  size_t p = h.find(k);
  if (p == std::string::npos) EMBER_THROW(FormatError, source, ": npy header has no ", k);
  p = h.find(':', p + k.size());
  if (p == std::string::npos) EMBER_THROW(FormatError, source, ": npy header: no value for ", k);
  p = h.find_first_not_of(' ', p + 1);
  if (p == std::string::npos) EMBER_THROW(FormatError, source, ": npy header: no value for ", k);
  return p;
}

}  // namespace

Tensor deserialize_npy(const void* data, size_t size, const std::string& source) {
  const char* bytes = static_cast<const char*>(data);
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0)
    EMBER_THROW(FormatError, source, ": not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) EMBER_THROW(FormatError, source, ": truncated .npy header");
    for (int i = 3; i >= 0; --i) header_len = header_len << 8 | static_cast<unsigned char>(bytes[8 + i]);
    start = 12;
  } else {
    EMBER_THROW(FormatError, source, ": .npy format version ", major, " is not 1, 2 or 3");
  }
  if (header_len > kMaxHeader || start + header_len > size)
    EMBER_THROW(FormatError, source, ": .npy header of ", header_len, " bytes runs past the file (",
                size, " bytes)");
  const std::string h(bytes + start, header_len);
  // descr
  size_t p = value_pos(h, "descr", source);
  if (h[p] != '\'') EMBER_THROW(FormatError, source, ": npy 'descr' is not a string");
  const size_t q = h.find('\'', p + 1);
  if (q == std::string::npos) EMBER_THROW(FormatError, source, ": npy 'descr' is not closed");
  const std::string descr = h.substr(p + 1, q - p - 1);
  std::optional<DType> dtype;
  for (const auto& d : kDescrs) {
    const std::string name = d.descr;
    if (descr == "<" + name || descr == "=" + name || descr == "|" + name ||
        (itemsize(d.dtype) == 1 && descr == ">" + name))
      dtype = d.dtype;
  }
  if (!dtype)
    EMBER_THROW(DTypeError, source, ": NumPy dtype '", descr, "' is not one Ember reads (<f4 <f8 ",
                "<f2 <i4 <i8 |u1 |b1; big-endian data is refused)");
  // fortran_order
  p = value_pos(h, "fortran_order", source);
  const bool fortran = h.compare(p, 4, "True") == 0;
  if (!fortran && h.compare(p, 5, "False") != 0)
    EMBER_THROW(FormatError, source, ": npy 'fortran_order' is neither True nor False");
  // shape
  p = value_pos(h, "shape", source);
  if (h[p] != '(') EMBER_THROW(FormatError, source, ": npy 'shape' is not a tuple");
  const size_t close = h.find(')', p);
  if (close == std::string::npos) EMBER_THROW(FormatError, source, ": npy 'shape' is not closed");
  Shape shape;
  std::string item;
  std::istringstream dims(h.substr(p + 1, close - p - 1));
  while (std::getline(dims, item, ',')) {
    const size_t a = item.find_first_not_of(" L"), b = item.find_last_not_of(" L");
    if (a == std::string::npos) continue;
    const std::string digits = item.substr(a, b - a + 1);
    if (digits.empty() || digits.size() > 15 || digits.find_first_not_of("0123456789") != std::string::npos)
      EMBER_THROW(FormatError, source, ": npy shape entry '", digits, "' is not a size");
    shape.push_back(std::stoll(digits));
  }
  const int64_t n = checked_numel(shape);
  const size_t need = static_cast<size_t>(n) * itemsize(*dtype);
  const size_t have = size - start - header_len;
  if (n > static_cast<int64_t>(size) || have != need)
    EMBER_THROW(FormatError, source, ": npy data holds ", have, " bytes, shape ", shape, " of ",
                dtype_name(*dtype), " needs ", static_cast<size_t>(n) * itemsize(*dtype));
  if (!fortran) return from_host(bytes + start + header_len, shape, *dtype);
  // Column-major: the reversed shape in row-major order, transposed back.
  Shape rev(shape.rbegin(), shape.rend());
  std::vector<int64_t> perm;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) perm.push_back(d);
  return contiguous(permute(from_host(bytes + start + header_len, rev, *dtype), perm));
}

Tensor load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) EMBER_THROW(IOError, "npy: cannot open '", path, "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  return deserialize_npy(bytes.data(), bytes.size(), path);
}

void save_npy(const std::string& path, const Tensor& t) {
  const Tensor c = to(t, kCPU).contiguous();
  // Python's tuple syntax: (), (3,), (2, 3).
  std::string shape = "(";
  for (int64_t d = 0; d < c.dim(); ++d) shape += (d ? ", " : "") + std::to_string(c.size(d));
  shape += c.dim() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr_of(c.dtype()) + "', 'fortran_order': False, 'shape': " +
                       shape + ", }";
  // Magic, version, length, header padded with spaces to a multiple of 64, then a newline.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) EMBER_THROW(IOError, "npy: cannot write '", tmp, "'");
    out.write(kMagic, 6);
    const char version[2] = {1, 0};
    out.write(version, 2);
    const char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
    out.write(len, 2);
    out << header;
    out.write(static_cast<const char*>(c.data_ptr()),
              static_cast<std::streamsize>(c.numel() * static_cast<int64_t>(c.element_size())));
    if (!out) EMBER_THROW(IOError, "npy: writing '", tmp, "' failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    EMBER_THROW(IOError, "npy: cannot rename '", tmp, "' to '", path, "'");
}

}  // namespace ember

// The digits, MNIST (IDX) and CIFAR-10 readers, and the search for the bundled data directory.
#include "nn/datasets.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace ember {
namespace {

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string executable_dir() {
  std::vector<char> buf(4096);
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  std::string exe(buf.data(), static_cast<size_t>(n));
  size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "" : exe.substr(0, slash);
}

// The whole file. IOError names the path, the system error, and what `reader` expects there.
std::string read_file(const std::string& path, const char* reader, const std::string& expected) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  struct stat st;
  if (!f || ::fstat(::fileno(f.get()), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::string why = !f ? std::strerror(errno) : "not a regular file";
    std::string hint =
        is_file(path + ".gz") ? "; found '" + path + ".gz': decompress it first (gunzip)" : "";
    EMBER_THROW(IOError, reader, ": cannot read '", path, "': ", why, " (expected ", expected, ")",
                hint);
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  if (std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size())
    EMBER_THROW(IOError, reader, ": cannot read '", path, "': ", std::strerror(errno));
  return bytes;
}

uint32_t be32(const std::string& b, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(b.data() + at);
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}
uint32_t le32(const std::string& b, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(b.data() + at);
  return (uint32_t(p[3]) << 24) | (uint32_t(p[2]) << 16) | (uint32_t(p[1]) << 8) | p[0];
}

#define BAD(path, ...) EMBER_THROW(FormatError, path, ": ", __VA_ARGS__)

// Float images [n, c, h, w] from bytes (value / scale), and int64 labels from bytes (< classes).
Tensor pixels_to_float(const unsigned char* src, int64_t n, int64_t c, int64_t h, int64_t w,
                       float scale) {
  Tensor x = empty({n, c, h, w});
  float* dst = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] = static_cast<float>(src[i]) / scale;
  return x;
}
Tensor labels_to_int64(const std::vector<unsigned char>& labels) {
  Tensor y = empty({static_cast<int64_t>(labels.size())}, kInt64);
  int64_t* p = y.data<int64_t>();
  for (size_t i = 0; i < labels.size(); ++i) p[i] = labels[i];
  return y;
}

}  // namespace

const char* split_name(Split split) {
  return split == Split::train ? "train" : "test";
}

std::string default_data_dir() {
  const std::string marker = "digits/digits.bin";
  if (const char* env = std::getenv("EMBER_DATA_DIR"); env && *env) {
    if (!is_dir(env))
      EMBER_THROW(IOError, "default_data_dir: EMBER_DATA_DIR='", env, "' is not a directory");
    return env;
  }
  std::vector<std::string> candidates;
#ifdef EMBER_SOURCE_DATA_DIR
  candidates.push_back(EMBER_SOURCE_DATA_DIR);
#endif
  candidates.push_back("data");
  std::string exe = executable_dir();
  if (!exe.empty()) {
    candidates.push_back(exe + "/../data");
    candidates.push_back(exe + "/../../data");
    candidates.push_back(exe + "/../share/ember/data");
  }
  std::string tried;
  for (const std::string& c : candidates) {
    if (is_file(join(c, marker))) return c;
    tried += "\n  " + c;
  }
  EMBER_THROW(IOError, "default_data_dir: no directory holding ", marker,
              " found; set EMBER_DATA_DIR to Ember's data/ directory. Tried:", tried);
}

TensorDataset load_digits(const std::string& data_dir, Split split) {
  std::string path = join(data_dir, "digits/digits.bin");
  if (!is_file(path) && is_file(join(data_dir, "digits.bin"))) path = join(data_dir, "digits.bin");
  std::string b = read_file(path, "load_digits", "digits.bin from Ember's data/digits/");
  constexpr size_t kHeader = 32;
  if (b.size() < kHeader) BAD(path, "file is ", b.size(), " bytes, shorter than its header");
  if (b.compare(0, 8, "EMBRDIGT") != 0) BAD(path, "not a digits file (bad magic)");
  uint32_t version = le32(b, 8), n = le32(b, 12), n_train = le32(b, 16);
  uint32_t h = le32(b, 20), w = le32(b, 24), max_value = le32(b, 28);
  if (version != 1) BAD(path, "unsupported version ", version, " (expected 1)");
  if (n_train > n) BAD(path, "training count ", n_train, " exceeds the count ", n);
  if (h == 0 || w == 0 || h > 1024 || w > 1024)
    BAD(path, "image size ", h, "x", w, " out of range");
  if (max_value == 0 || max_value > 255)
    BAD(path, "largest pixel value ", max_value, " out of range");
  uint64_t expected = kHeader + uint64_t(n) * h * w + n;
  if (b.size() != expected)
    BAD(path, "file is ", b.size(), " bytes, expected ", expected, " for ", n, " images of ", h,
        "x", w);
  const auto* pixels = reinterpret_cast<const unsigned char*>(b.data() + kHeader);
  const auto* labels = pixels + uint64_t(n) * h * w;
  for (uint64_t i = 0; i < uint64_t(n) * h * w; ++i)
    if (pixels[i] > max_value)
      BAD(path, "pixel ", i % (h * w), " of image ", i / (h * w), " is ", int(pixels[i]),
          ", above ", max_value);
  uint32_t first = split == Split::train ? 0 : n_train;
  uint32_t count = split == Split::train ? n_train : n - n_train;
  for (uint32_t i = 0; i < n; ++i)
    if (labels[i] > 9) BAD(path, "label of image ", i, " is ", int(labels[i]), ", not 0..9");
  std::vector<unsigned char> y(labels + first, labels + first + count);
  return TensorDataset(pixels_to_float(pixels + uint64_t(first) * h * w, count, 1, h, w,
                                       static_cast<float>(max_value)),
                       labels_to_int64(y));
}

TensorDataset load_mnist(const std::string& dir, Split split) {
  const std::string prefix = split == Split::train ? "train" : "t10k";
  const std::string expected = prefix + "-images-idx3-ubyte and " + prefix +
                               "-labels-idx1-ubyte in '" + dir +
                               "' (MNIST or Fashion-MNIST, uncompressed)";
  const std::string ipath = join(dir, prefix + "-images-idx3-ubyte");
  const std::string lpath = join(dir, prefix + "-labels-idx1-ubyte");
  std::string img = read_file(ipath, "load_mnist", expected);
  std::string lab = read_file(lpath, "load_mnist", expected);

  if (img.size() < 16)
    BAD(ipath, "file is ", img.size(), " bytes, shorter than the 16-byte header");
  if (be32(img, 0) != 0x803)
    BAD(ipath, "magic number 0x", std::hex, be32(img, 0), " is not 0x00000803 (IDX u8 images)");
  uint64_t n = be32(img, 4), rows = be32(img, 8), cols = be32(img, 12);
  if (rows == 0 || cols == 0 || rows > 65536 || cols > 65536)
    BAD(ipath, "image size ", rows, "x", cols, " out of range");
  uint64_t pixels = n * rows * cols;  // < 2^32 * 2^16 * 2^16: no overflow
  if (img.size() - 16 != pixels)
    BAD(ipath, "file is ", img.size(), " bytes, expected ", 16 + pixels, " for ", n, " images of ",
        rows, "x", cols);

  if (lab.size() < 8) BAD(lpath, "file is ", lab.size(), " bytes, shorter than the 8-byte header");
  if (be32(lab, 0) != 0x801)
    BAD(lpath, "magic number 0x", std::hex, be32(lab, 0), " is not 0x00000801 (IDX u8 labels)");
  uint64_t nl = be32(lab, 4);
  if (lab.size() - 8 != nl)
    BAD(lpath, "file is ", lab.size(), " bytes, expected ", 8 + nl, " for ", nl, " labels");
  if (nl != n) BAD(lpath, "holds ", nl, " labels but ", ipath, " holds ", n, " images");
  std::vector<unsigned char> y(lab.begin() + 8, lab.end());
  for (size_t i = 0; i < y.size(); ++i)
    if (y[i] > 9) BAD(lpath, "label ", i, " is ", int(y[i]), ", not 0..9");
  return TensorDataset(pixels_to_float(reinterpret_cast<const unsigned char*>(img.data() + 16),
                                       int64_t(n), 1, int64_t(rows), int64_t(cols), 255.0f),
                       labels_to_int64(y));
}

TensorDataset load_cifar10(const std::string& dir_in, Split split) {
  std::string dir = dir_in;
  if (!is_file(join(dir, "test_batch.bin")) && !is_file(join(dir, "data_batch_1.bin")) &&
      is_dir(join(dir, "cifar-10-batches-bin")))
    dir = join(dir, "cifar-10-batches-bin");
  std::vector<std::string> names;
  if (split == Split::train) {
    for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    names.push_back("test_batch.bin");
  }
  const std::string expected = "data_batch_1.bin .. data_batch_5.bin and test_batch.bin in '" +
                               dir + "' (CIFAR-10 binary version)";
  constexpr size_t kPixels = 3 * 32 * 32, kRecord = 1 + kPixels;
  std::vector<std::string> files;
  size_t total = 0;
  for (const std::string& name : names) {
    std::string path = join(dir, name);
    files.push_back(read_file(path, "load_cifar10", expected));
    const std::string& b = files.back();
    if (b.empty() || b.size() % kRecord != 0)
      BAD(path, "file is ", b.size(), " bytes, not a positive multiple of the ", kRecord,
          "-byte record (1 label + 3072 pixels)");
    for (size_t r = 0; r < b.size() / kRecord; ++r) {
      auto label = static_cast<unsigned char>(b[r * kRecord]);
      if (label > 9) BAD(path, "label of record ", r, " is ", int(label), ", not 0..9");
    }
    total += b.size() / kRecord;
  }
  Tensor x = empty({int64_t(total), 3, 32, 32});
  std::vector<unsigned char> y;
  y.reserve(total);
  float* dst = x.data<float>();
  for (const std::string& b : files) {
    for (size_t r = 0; r < b.size() / kRecord; ++r) {
      const auto* rec = reinterpret_cast<const unsigned char*>(b.data() + r * kRecord);
      y.push_back(rec[0]);
      for (size_t k = 0; k < kPixels; ++k) *dst++ = static_cast<float>(rec[1 + k]) / 255.0f;
    }
  }
  return TensorDataset(x, labels_to_int64(y));
}

}  // namespace ember

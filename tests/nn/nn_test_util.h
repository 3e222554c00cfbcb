// Helpers for the nn tests: a scratch directory removed on exit, byte files, error matching.
#pragma once

#include <dirent.h>
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace ember_test {

// A fresh directory under $TMPDIR (or /tmp), removed with its files when destroyed.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ember_nn_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    REQUIRE(::mkdtemp(buf.data()) != nullptr);
    path_ = buf.data();
  }
  ~TempDir() { remove_tree(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Names of the entries in the directory (not "." or "..").
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
      }
      ::closedir(d);
    }
    return names;
  }

 private:
  static void remove_tree(const std::string& p) {
    if (DIR* d = ::opendir(p.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        std::string child = p + "/" + n;
        struct stat st;
        if (::lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
          remove_tree(child);
        } else {
          ::unlink(child.c_str());
        }
      }
      ::closedir(d);
    }
    ::rmdir(p.c_str());
  }
  std::string path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  REQUIRE(std::fclose(f) == 0);
}

inline std::string read_bytes(const std::string& path) {
  std::string out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

// Runs `fn`, which must throw `E` with a message containing every one of `parts`.
template <typename E, typename Fn>
void check_throws_with(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    FAIL("expected an exception containing '", *parts.begin(), "'");
  } catch (const E& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) {
      INFO("message: ", msg);
      CHECK_MESSAGE(msg.find(p) != std::string::npos, "missing '", p, "'");
    }
  }
}

}  // namespace ember_test

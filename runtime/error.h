// Ember's typed errors and the check macros that raise them.
//
// Every failure the library reports is an ember::Error (a std::runtime_error), of a subtype that
// says what kind of thing went wrong. Messages name the op, the shapes, dtypes and devices
// involved, and what was expected. The library never calls exit() or abort().
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};
class ShapeError : public Error { using Error::Error; };
// Its message ends with autocast's state when a region is open (runtime/autocast_state.h).
class DTypeError : public Error {
 public:
  explicit DTypeError(const std::string& what);
};
class DeviceError : public Error { using Error::Error; };
class IndexError : public Error { using Error::Error; };
class ValueError : public Error { using Error::Error; };
class CudaError : public Error { using Error::Error; };
class CudnnError : public Error { using Error::Error; };
class CublasError : public Error { using Error::Error; };
class FormatError : public Error { using Error::Error; };
class IOError : public Error { using Error::Error; };

// Raised when an allocator cannot satisfy a request; carries the numbers needed to act on it.
class OutOfMemory : public Error {
 public:
  OutOfMemory(const std::string& device, size_t requested, size_t allocated, size_t reserved,
              size_t capacity);
  size_t requested() const { return requested_; }
  size_t allocated() const { return allocated_; }
  size_t reserved() const { return reserved_; }
  size_t capacity() const { return capacity_; }

 private:
  size_t requested_, allocated_, reserved_, capacity_;
};

namespace detail {
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

// Human-readable byte count ("1.50 MiB").
std::string format_bytes(size_t bytes);

}  // namespace ember

// EMBER_CHECK_T(ShapeError, cond, "conv2d: expected 4-D input, got ", x.shape());
#define EMBER_CHECK_T(ErrorType, cond, ...)                                \
  do {                                                                     \
    if (!(cond)) throw ::ember::ErrorType(::ember::detail::str_cat(__VA_ARGS__)); \
  } while (0)
#define EMBER_CHECK(cond, ...) EMBER_CHECK_T(Error, cond, __VA_ARGS__)
#define EMBER_CHECK_SHAPE(cond, ...) EMBER_CHECK_T(ShapeError, cond, __VA_ARGS__)
#define EMBER_CHECK_DTYPE(cond, ...) EMBER_CHECK_T(DTypeError, cond, __VA_ARGS__)
#define EMBER_CHECK_DEVICE(cond, ...) EMBER_CHECK_T(DeviceError, cond, __VA_ARGS__)
#define EMBER_CHECK_INDEX(cond, ...) EMBER_CHECK_T(IndexError, cond, __VA_ARGS__)
#define EMBER_CHECK_VALUE(cond, ...) EMBER_CHECK_T(ValueError, cond, __VA_ARGS__)
#define EMBER_THROW(ErrorType, ...) throw ::ember::ErrorType(::ember::detail::str_cat(__VA_ARGS__))

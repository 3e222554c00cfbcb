// The error hierarchy and message helpers.
#include <doctest/doctest.h>

#include "runtime/error.h"

using namespace ember;

TEST_CASE("every error is an ember::Error and a std::runtime_error") {
  auto check = [](auto&& thrower) {
    CHECK_THROWS_AS(thrower(), Error);
    CHECK_THROWS_AS(thrower(), std::runtime_error);
  };
  check([] { throw ShapeError("s"); });
  check([] { throw DTypeError("d"); });
  check([] { throw DeviceError("v"); });
  check([] { throw CudaError("c"); });
  check([] { throw CudnnError("c"); });
  check([] { throw CublasError("c"); });
  check([] { throw FormatError("f"); });
  check([] { throw IOError("i"); });
  check([] { throw OutOfMemory("cuda:0", 1, 2, 3, 4); });
}

TEST_CASE("check macros build the message from their arguments") {
  try {
    int rank = 3;
    EMBER_CHECK_SHAPE(rank == 4, "conv2d: expected 4-D input, got ", rank, "-D");
    FAIL("no throw");
  } catch (const ShapeError& e) {
    CHECK(std::string(e.what()) == "conv2d: expected 4-D input, got 3-D");
  }
}

TEST_CASE("OutOfMemory carries its numbers") {
  OutOfMemory e("emu:0", 3 << 20, 1 << 20, 2 << 20, size_t{4} << 30);
  CHECK(e.requested() == (3u << 20));
  CHECK(e.capacity() == (4ull << 30));
  std::string m = e.what();
  CHECK(m.find("emu:0") != std::string::npos);
  CHECK(m.find("3.00 MiB") != std::string::npos);
  CHECK(m.find("4.00 GiB") != std::string::npos);
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1536) == "1.50 KiB");
}

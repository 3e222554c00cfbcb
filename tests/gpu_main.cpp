// Entry point of the `gpu` test executable: runs the doctest cases when a CUDA device is usable,
// otherwise prints why and exits 77, which ctest reports as "skipped".
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "runtime/gpu.h"

int main(int argc, char** argv) {
  auto a = ember::gpu::backend(ember::DeviceType::CUDA).availability();
  if (!a.usable) {
    std::printf("gpu tests skipped: CUDA not usable (%s)\n", a.reason.c_str());
    return 77;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}

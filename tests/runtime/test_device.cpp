// Device parsing, printing, and the errors for unusable devices.
#include <doctest/doctest.h>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/gpu.h"
#include "runtime/tensor.h"

using namespace ember;

TEST_CASE("device parse and print") {
  CHECK(Device::parse("cpu") == kCPU);
  CHECK(Device::parse("cuda").str() == "cuda:0");
  CHECK(Device::parse("cuda:3") == Device(DeviceType::CUDA, 3));
  CHECK(Device::parse("emu:1").str() == "emu:1");
  CHECK(Device(DeviceType::EMU, 2).str() == "emu:2");
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "cpu:1", "", "cuda:1:2"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(Device::parse(bad), DeviceError);
  }
  try {
    Device::parse("tpu:0");
    FAIL("expected DeviceError");
  } catch (const DeviceError& e) {
    CHECK(std::string(e.what()).find("tpu:0") != std::string::npos);
    CHECK(std::string(e.what()).find("expected cpu, cuda") != std::string::npos);
  }
}

TEST_CASE("auto picks cuda only when usable") {
  gpu::Availability a = gpu::backend(DeviceType::CUDA).availability();
  Device d = Device::parse("auto");
  if (a.usable)
    CHECK(d.is_cuda());
  else
    CHECK(d.is_cpu());
  CHECK(Device::best() == d);  // the choice is stable
}

TEST_CASE("asking for an unusable cuda device says why") {
  gpu::Availability a = gpu::backend(DeviceType::CUDA).availability();
  if (a.usable) return;  // covered by the gpu suite
  CHECK_FALSE(a.reason.empty());
  try {
    empty({2, 2}, {kFloat32, Device(DeviceType::CUDA, 0)});
    FAIL("expected DeviceError");
  } catch (const DeviceError& e) {
    std::string msg = e.what();
    CHECK(msg.find("cuda:0") != std::string::npos);
    CHECK(msg.find(a.reason) != std::string::npos);
  }
}

TEST_CASE("a device index past the last device is refused") {
  for (DeviceType t : {DeviceType::CUDA, DeviceType::EMU}) {
    gpu::Backend& b = gpu::backend(t);
    if (!b.availability().usable) continue;
    Device past(t, b.device_count());
    CHECK_THROWS_AS(gpu::require_device(past), DeviceError);
  }
}

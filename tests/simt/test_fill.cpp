// The kernels/cuda fill and add kernels on the emu device, through Tensor memory.
#include <doctest/doctest.h>

#include <cstdlib>

#include "kernels/cuda/fill.cuh"
#include "runtime/gpu.h"
#include "runtime/tensor.h"

namespace ember {

TEST_CASE("emu device: tensors live there and fill_f32/add_f32 run on them") {
  const Device emu = Device::parse("emu:0");
  Tensor y = empty({1000}, {kFloat32, emu});
  CHECK(y.device() == emu);
  kernels::emu::fill_f32(static_cast<float*>(y.data_ptr()), 2.5f, y.numel(), nullptr);
  std::vector<float> host = y.to_vector<float>();
  REQUIRE(host.size() == 1000);
  for (float v : host) CHECK(v == 2.5f);

  std::vector<float> av(1000), bv(1000);
  for (int i = 0; i < 1000; ++i) av[i] = float(i), bv[i] = 0.5f * float(i);
  Tensor a = from_vector(av, {1000}).to(emu), b = from_vector(bv, {1000}).to(emu);
  kernels::emu::add_f32(static_cast<const float*>(a.data_ptr()),
                        static_cast<const float*>(b.data_ptr()), static_cast<float*>(y.data_ptr()),
                        1000, nullptr);
  host = y.to_vector<float>();
  for (int i = 0; i < 1000; ++i) CHECK(host[i] == 1.5f * float(i));
}

TEST_CASE("emu device: properties and memory capacity") {
  gpu::Backend& b = gpu::backend(DeviceType::EMU);
  CHECK(b.availability().usable);
  CHECK(b.device_count() >= 1);
  gpu::DeviceProps p = b.properties(0);
  CHECK(p.name == "Ember SIMT emulator");
  CHECK(p.major == 9);
  CHECK(p.warp_size == 32);
  CHECK(p.shared_mem_per_block == 48 * 1024);
  CHECK(p.shared_mem_per_block_optin == 227 * 1024);
  CHECK(b.malloc(0, p.total_memory + 1) == nullptr);
}

TEST_CASE("emu device: a request beyond its capacity is an OutOfMemory carrying the numbers") {
  const Device emu = Device::parse("emu:0");
  const size_t capacity = gpu::backend(emu).properties(0).total_memory;
  try {
    (void)empty({static_cast<int64_t>(capacity) + 1}, {kUInt8, emu});
    FAIL("no OutOfMemory");
  } catch (const OutOfMemory& e) {
    CHECK(e.requested() >= capacity + 1);
    CHECK(e.capacity() == capacity);
  }
}

}  // namespace ember

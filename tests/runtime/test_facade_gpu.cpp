// The real CUDA facade on a GPU: tensors on cuda:0, copies in every direction, streams, events,
// memset, the caching allocator and its out-of-memory error. Runs only where a GPU is usable.
#include <doctest/doctest.h>

#include <cstdlib>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/gpu.h"
#include "runtime/tensor.h"

using namespace ember;

namespace {
const Device kGpu(DeviceType::CUDA, 0);
}

TEST_CASE("device properties are sane") {
  gpu::Backend& b = gpu::backend(DeviceType::CUDA);
  REQUIRE(b.device_count() >= 1);
  gpu::DeviceProps p = b.properties(0);
  CHECK_FALSE(p.name.empty());
  CHECK(p.major >= 7);
  CHECK(p.warp_size == 32);
  CHECK(p.total_memory > (size_t{1} << 30));
  gpu::MemInfo m = b.mem_info(0);
  CHECK(m.free <= m.total);
}

TEST_CASE("tensors round-trip through cuda:0") {
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f - 3.0f;
  Tensor c = from_vector(host, {10, 100}).to(kGpu);
  CHECK(c.device() == kGpu);
  CHECK(c.to_vector<float>() == host);
  // Device-to-device copy, strided view, and cast all come back right.
  Tensor d = c.clone();
  CHECK(d.to_vector<float>() == host);
  Tensor t = c.t().contiguous();
  std::vector<float> tv = t.to_vector<float>();
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 100; ++j) CHECK(tv[j * 10 + i] == host[i * 100 + j]);
  CHECK(c.to(kFloat64).to_vector<double>()[7] == static_cast<double>(host[7]));
  Tensor z = zeros({3, 3}, {kFloat32, kGpu});
  for (float v : z.to_vector<float>()) CHECK(v == 0.0f);
  Tensor f = full({4}, 2.5, {kFloat64, kGpu});
  CHECK(f.to_vector<double>() == std::vector<double>{2.5, 2.5, 2.5, 2.5});
}

TEST_CASE("async copies on a stream, ordered by events") {
  gpu::Backend& b = gpu::backend(DeviceType::CUDA);
  gpu::Stream s = b.stream_create(0);
  gpu::Event e0 = b.event_create(0), e1 = b.event_create(0);
  const size_t n = 1 << 20;
  std::vector<int> src(n), dst(n, -1);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<int>(i * 7);
  void* dev = b.malloc(0, n * sizeof(int));
  REQUIRE(dev != nullptr);
  b.event_record(e0, s);
  b.memcpy_async(dev, src.data(), n * sizeof(int), gpu::CopyKind::HostToDevice, s);
  b.memset_async(dev, 0, 16 * sizeof(int), s);
  b.memcpy_async(dst.data(), dev, n * sizeof(int), gpu::CopyKind::DeviceToHost, s);
  b.event_record(e1, s);
  b.event_synchronize(e1);
  CHECK(b.event_elapsed_ms(e0, e1) >= 0.0f);
  for (size_t i = 0; i < 16; ++i) CHECK(dst[i] == 0);
  for (size_t i = 16; i < n; i += 997) CHECK(dst[i] == static_cast<int>(i * 7));
  b.free(0, dev);
  b.event_destroy(e0);
  b.event_destroy(e1);
  b.stream_destroy(s);
}

TEST_CASE("caching allocator on cuda:0: reuse, stats, out of memory") {
  Allocator& a = allocator_for(kGpu);
  a.empty_cache();
  MemoryStats s0 = a.stats();
  { Tensor t = empty({1 << 20}, {kFloat32, kGpu}); }
  MemoryStats s1 = a.stats();
  CHECK(s1.allocated == s0.allocated);
  CHECK(s1.reserved >= s0.reserved + (4u << 20));
  { Tensor t = empty({1 << 20}, {kFloat32, kGpu}); }
  CHECK(a.stats().num_cache_hits == s1.num_cache_hits + 1);
  a.empty_cache();
  CHECK(a.stats().reserved == s0.reserved);
  gpu::DeviceProps p = gpu::backend(DeviceType::CUDA).properties(0);
  int64_t too_many = static_cast<int64_t>(p.total_memory / 4) * 2;  // twice the device, in floats
  try {
    Tensor huge = empty({too_many}, {kFloat32, kGpu});
    FAIL("expected OutOfMemory");
  } catch (const OutOfMemory& e) {
    CHECK(e.capacity() == p.total_memory);
    CHECK(std::string(e.what()).find("cuda:0") != std::string::npos);
  }
  // The device is still usable afterwards.
  CHECK(full({2}, 1.0, {kFloat32, kGpu}).to_vector<float>() == std::vector<float>{1, 1});
}

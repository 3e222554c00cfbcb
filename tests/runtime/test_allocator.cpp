// CPU allocator statistics and the caching allocator (over a bounded host pool).
#include <doctest/doctest.h>

#include <cstdlib>

#include "runtime/allocator.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

using namespace ember;

namespace {
// Raw memory with a hard capacity, counting what it handed out.
class BoundedPool : public RawMemory {
 public:
  explicit BoundedPool(size_t cap) : cap_(cap) {}
  void* alloc(size_t bytes) override {
    if (used_ + bytes > cap_) return nullptr;
    used_ += bytes;
    ++allocs;
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    sizes_[p] = bytes;
    return p;
  }
  void release(void* p) noexcept override {
    used_ -= sizes_[p];
    sizes_.erase(p);
    ++releases;
    std::free(p);
  }
  size_t capacity() override { return cap_; }
  size_t used() const { return used_; }
  int allocs = 0, releases = 0;

 private:
  size_t cap_, used_ = 0;
  std::map<void*, size_t> sizes_;
};
}  // namespace

TEST_CASE("cpu allocator counts live bytes and the peak") {
  Allocator& a = allocator_for(kCPU);
  MemoryStats s0 = a.stats();
  {
    Tensor t = empty({1000}, kFloat64);  // 8000 bytes, in the 8192-byte size class
    MemoryStats s1 = a.stats();
    CHECK(s1.allocated - s0.allocated == 8192);
    CHECK(s1.peak_allocated >= s1.allocated);
    a.reset_peak();
  }
  CHECK(a.stats().allocated == s0.allocated);
  CHECK(a.stats().peak_allocated >= s0.allocated);
}

TEST_CASE("caching allocator reuses blocks and keeps statistics") {
  auto pool = std::make_unique<BoundedPool>(64 << 20);
  BoundedPool* raw = pool.get();
  CachingAllocator a("test:0", std::move(pool));
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size((1 << 20) + 1) == (2 << 20));
  {
    DataPtr p = a.allocate(1000);
    CHECK(reinterpret_cast<uintptr_t>(p.get()) % 256 == 0);
    MemoryStats s = a.stats();
    CHECK(s.allocated == 1024);
    CHECK(s.reserved == 1024);
    CHECK(s.num_device_allocs == 1);
  }
  MemoryStats s = a.stats();
  CHECK(s.allocated == 0);
  CHECK(s.reserved == 1024);  // cached, not returned
  {
    DataPtr q = a.allocate(900);  // same size class: served from the cache
    CHECK(a.stats().num_cache_hits == 1);
    CHECK(raw->allocs == 1);
    DataPtr r = a.allocate(3 << 20);
    CHECK(a.stats().allocated == 1024 + (4 << 20));
    CHECK(a.stats().peak_allocated == 1024 + (4 << 20));
  }
  // A request much smaller than the only cached block does not take it.
  {
    DataPtr same_class = a.allocate(600);  // takes the cached 1024-byte block
    CHECK(raw->allocs == 2);
    DataPtr small = a.allocate(100);  // only the 4 MiB block is cached: too big to hand out
    CHECK(raw->allocs == 3);
  }
  a.empty_cache();
  CHECK(a.stats().reserved == 0);
  CHECK(raw->used() == 0);
  CHECK(a.allocate(0) == nullptr);
}

TEST_CASE("a cap on cached bytes sends extra blocks straight back") {
  auto pool = std::make_unique<BoundedPool>(64 << 20);
  BoundedPool* raw = pool.get();
  CachingAllocator a("test:2", std::move(pool), /*max_cached=*/3 << 20);
  {
    DataPtr p = a.allocate(2 << 20);
    DataPtr q = a.allocate(2 << 20);
  }
  CHECK(raw->releases == 1);  // only one 2 MiB block fits under the 3 MiB cap
  CHECK(a.stats().reserved == (2 << 20));
  CHECK(raw->used() == (2u << 20));
}

TEST_CASE("caching allocator frees its cache before giving up, then throws OutOfMemory") {
  auto pool = std::make_unique<BoundedPool>(8 << 20);
  BoundedPool* raw = pool.get();
  CachingAllocator a("test:1", std::move(pool));
  { DataPtr p = a.allocate(6 << 20); }  // cached 6 MiB
  DataPtr big = a.allocate(7 << 20);    // needs the cache released first
  CHECK(raw->releases == 1);
  CHECK(a.stats().reserved == (8 << 20));
  try {
    DataPtr more = a.allocate(4 << 20);
    FAIL("expected OutOfMemory");
  } catch (const OutOfMemory& e) {
    CHECK(e.requested() == (4u << 20));
    CHECK(e.allocated() == (8u << 20));
    CHECK(e.reserved() == (8u << 20));
    CHECK(e.capacity() == (8u << 20));
    CHECK(std::string(e.what()).find("test:1") != std::string::npos);
  }
}

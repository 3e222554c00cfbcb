// Memory allocators: a 64-byte-aligned CPU allocator and a caching allocator for GPU-like devices
// (`cuda`, `emu`), both with statistics.
//
// Note [Caching allocator]: GPU allocation (cudaMalloc) is slow and synchronising, so freed
// blocks are kept in per-stream pools and reused for requests of a similar size class: sizes are
// rounded up to 512 bytes below 1 MiB and to 2 MiB above, and a cached block is reused when it
// is at most twice the request. On out-of-memory the cache is released to the device and the
// allocation retried once before OutOfMemory is thrown. Blocks are never split, which keeps the
// allocator short and its behaviour easy to predict. A cap on cached bytes bounds what a
// cache may hold back from other users of the memory (the CPU allocator uses one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/device.h"
#include "runtime/gpu.h"

namespace ember {

// Owning pointer to a block of memory; its deleter returns the block to whoever gave it.
using DataPtr = std::shared_ptr<void>;

struct MemoryStats {
  size_t allocated = 0;       // bytes held by live blocks (rounded sizes)
  size_t reserved = 0;        // bytes obtained from the device/OS, live + cached
  size_t peak_allocated = 0;  // high-water mark of `allocated` since the last reset
  size_t num_allocs = 0;      // allocate() calls that returned memory
  size_t num_cache_hits = 0;  // of those, served from the cache
  size_t num_device_allocs = 0;  // blocks obtained from the device
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // requires: bytes may be 0 (then the result may be null).
  // ensures: the block is 64-byte aligned (CPU) or 256-byte aligned (GPU) and lives until the
  // last copy of the returned pointer is dropped. Throws OutOfMemory when it cannot be had.
  virtual DataPtr allocate(size_t bytes, gpu::Stream stream = nullptr) = 0;
  virtual MemoryStats stats() const = 0;
  virtual void reset_peak() = 0;
  // Gives cached, unused blocks back to the device. A no-op for allocators without a cache.
  virtual void empty_cache() {}
};

// The allocator serving `device`. The CPU allocator (64-byte aligned; caches up to 1 GiB of
// freed blocks, so large temporaries do not pay for fresh pages on every op) always exists; a GPU-like device must be
// usable (gpu::require_device) or DeviceError is thrown.
Allocator& allocator_for(Device device);

// Source of raw memory for a caching allocator: the GPU facade in the library, a bounded host
// pool in tests.
class RawMemory {
 public:
  virtual ~RawMemory() = default;
  virtual void* alloc(size_t bytes) = 0;  // nullptr when out of memory
  virtual void release(void* p) noexcept = 0;
  virtual size_t capacity() = 0;
};

class CachingAllocator final : public Allocator {
 public:
  // max_cached: freed blocks beyond this many cached bytes go straight back to `raw`.
  CachingAllocator(std::string device_name, std::unique_ptr<RawMemory> raw,
                   size_t max_cached = SIZE_MAX);
  ~CachingAllocator() override;
  DataPtr allocate(size_t bytes, gpu::Stream stream = nullptr) override;
  MemoryStats stats() const override;
  void reset_peak() override;
  void empty_cache() override;
  static size_t round_size(size_t bytes);

 private:
  void give_back(void* p, size_t size, gpu::Stream stream) noexcept;
  void release_cached_locked() noexcept;

  std::string device_name_;
  std::unique_ptr<RawMemory> raw_;
  size_t max_cached_;
  size_t cached_ = 0;
  mutable std::mutex mu_;
  // Free blocks by (stream, size).
  std::multimap<std::pair<gpu::Stream, size_t>, void*> free_;
  MemoryStats stats_;
};

}  // namespace ember

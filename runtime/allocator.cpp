#include "runtime/allocator.h"

#include <array>
#include <cstdlib>

#include <unistd.h>

#include "runtime/error.h"

namespace ember {
namespace {

constexpr size_t kCpuAlignment = 64;
constexpr size_t kCpuMaxCached = size_t{1} << 30;

// Host memory for the CPU allocator; capacity is the machine's physical memory.
class HostMemory final : public RawMemory {
 public:
  void* alloc(size_t bytes) override { return std::aligned_alloc(kCpuAlignment, bytes); }
  void release(void* p) noexcept override { std::free(p); }
  size_t capacity() override {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  }
};

// Raw device memory for the caching allocator, through the GPU facade.
class FacadeMemory final : public RawMemory {
 public:
  explicit FacadeMemory(Device d) : device_(d) {}
  void* alloc(size_t bytes) override { return gpu::backend(device_).malloc(device_.index, bytes); }
  void release(void* p) noexcept override { gpu::backend(device_).free(device_.index, p); }
  size_t capacity() override { return gpu::backend(device_).properties(device_.index).total_memory; }

 private:
  Device device_;
};

}  // namespace

CachingAllocator::CachingAllocator(std::string device_name, std::unique_ptr<RawMemory> raw,
                                   size_t max_cached)
    : device_name_(std::move(device_name)), raw_(std::move(raw)), max_cached_(max_cached) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> g(mu_);
  release_cached_locked();
}

size_t CachingAllocator::round_size(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = 2 << 20, kSmallLimit = 1 << 20;
  size_t unit = bytes < kSmallLimit ? kSmall : kLarge;
  size_t r = (bytes + unit - 1) / unit * unit;
  return r < bytes ? bytes : r;  // saturates on overflow; the device then refuses
}

DataPtr CachingAllocator::allocate(size_t bytes, gpu::Stream stream) {
  if (bytes == 0) return nullptr;
  const size_t size = round_size(bytes);
  std::unique_lock<std::mutex> lock(mu_);
  void* p = nullptr;
  size_t got = size;
  auto it = free_.lower_bound({stream, size});
  if (it != free_.end() && it->first.first == stream && it->first.second <= 2 * size) {
    p = it->second;
    got = it->first.second;
    free_.erase(it);
    cached_ -= got;
    stats_.num_cache_hits++;
  } else {
    p = raw_->alloc(size);
    if (!p && !free_.empty()) {
      release_cached_locked();
      p = raw_->alloc(size);
    }
    if (!p) throw OutOfMemory(device_name_, bytes, stats_.allocated, stats_.reserved, raw_->capacity());
    stats_.reserved += size;
    stats_.num_device_allocs++;
  }
  stats_.allocated += got;
  stats_.num_allocs++;
  if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
  return DataPtr(p, [this, got, stream](void* q) { give_back(q, got, stream); });
}

void CachingAllocator::give_back(void* p, size_t size, gpu::Stream stream) noexcept {
  std::lock_guard<std::mutex> g(mu_);
  stats_.allocated -= size;
  if (cached_ + size > max_cached_) {
    raw_->release(p);
    stats_.reserved -= size;
    return;
  }
  cached_ += size;
  free_.emplace(std::make_pair(stream, size), p);
}

void CachingAllocator::release_cached_locked() noexcept {
  for (auto& [key, p] : free_) {
    raw_->release(p);
    stats_.reserved -= key.second;
  }
  free_.clear();
  cached_ = 0;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> g(mu_);
  release_cached_locked();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> g(mu_);
  stats_.peak_allocated = stats_.allocated;
}

Allocator& allocator_for(Device device) {
  // Allocators are never destroyed: tensors held in static objects may outlive any static.
  static Allocator* cpu =
      new CachingAllocator("cpu", std::make_unique<HostMemory>(), kCpuMaxCached);
  if (device.is_cpu()) return *cpu;
  gpu::require_device(device);
  constexpr int kMaxDevices = 64;
  static std::mutex mu;
  static std::array<std::array<Allocator*, kMaxDevices>, 3> table{};
  EMBER_CHECK_DEVICE(device.index < kMaxDevices, "device index ", device.index, " too large");
  std::lock_guard<std::mutex> g(mu);
  Allocator*& slot = table[static_cast<int>(device.type)][device.index];
  if (!slot) slot = new CachingAllocator(device.str(), std::make_unique<FacadeMemory>(device));
  return *slot;
}

}  // namespace ember

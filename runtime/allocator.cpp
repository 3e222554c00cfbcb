#include "runtime/allocator.h"

#include <array>
#include <cstdlib>

#include "runtime/error.h"

namespace ember {
namespace {

constexpr size_t kCpuAlignment = 64;

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t bytes, gpu::Stream) override {
    if (bytes == 0) return nullptr;
    size_t size = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    EMBER_CHECK_VALUE(size >= bytes, "cpu allocation of ", bytes, " bytes overflows");
    void* p = std::aligned_alloc(kCpuAlignment, size);
    if (!p) {
      std::lock_guard<std::mutex> g(mu_);
      throw OutOfMemory("cpu", bytes, stats_.allocated, stats_.reserved, 0);
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      stats_.allocated += size;
      stats_.reserved += size;
      stats_.num_allocs++;
      stats_.num_device_allocs++;
      if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
    }
    return DataPtr(p, [this, size](void* q) {
      std::free(q);
      std::lock_guard<std::mutex> g(mu_);
      stats_.allocated -= size;
      stats_.reserved -= size;
    });
  }
  MemoryStats stats() const override {
    std::lock_guard<std::mutex> g(mu_);
    return stats_;
  }
  void reset_peak() override {
    std::lock_guard<std::mutex> g(mu_);
    stats_.peak_allocated = stats_.allocated;
  }

 private:
  mutable std::mutex mu_;
  MemoryStats stats_;
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

CachingAllocator::CachingAllocator(std::string device_name, std::unique_ptr<RawMemory> raw)
    : device_name_(std::move(device_name)), raw_(std::move(raw)) {}

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
  free_.emplace(std::make_pair(stream, size), p);
}

void CachingAllocator::release_cached_locked() noexcept {
  for (auto& [key, p] : free_) {
    raw_->release(p);
    stats_.reserved -= key.second;
  }
  free_.clear();
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
  static Allocator* cpu = new CpuAllocator();
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

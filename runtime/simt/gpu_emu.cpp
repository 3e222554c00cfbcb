// The GPU facade for the `emu` device: the SIMT emulator seen as a GPU.
//
// Memory is host memory (256-byte aligned) counted against a capacity, so the caching
// allocator's out-of-memory path behaves as on a GPU. Streams are in order and synchronous: a
// launch, copy or memset runs to completion when it is enqueued, so stream and device
// synchronisation have nothing to wait for, and an event records the host time at which it is
// recorded. Environment: EMBER_EMU_DEVICES (count, default 1), EMBER_EMU_MEMORY (capacity per
// device in bytes, suffix K/M/G allowed, default 4G), EMBER_EMU_SMS (multiprocessors, default 8).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/error.h"
#include "runtime/gpu_backends.h"
#include "runtime/simt/simt.h"

namespace ember::gpu {
namespace {

size_t parse_size(const char* name, const char* s, size_t fallback) {
  if (!s || !*s) return fallback;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  size_t scale = 1;
  if (*end == 'K' || *end == 'k')
    scale = size_t(1) << 10, ++end;
  else if (*end == 'M' || *end == 'm')
    scale = size_t(1) << 20, ++end;
  else if (*end == 'G' || *end == 'g')
    scale = size_t(1) << 30, ++end;
  EMBER_CHECK_VALUE(*end == '\0' && v > 0, name,
                    ": expected a positive number (suffix K, M or G "
                    "allowed), got '",
                    s, "'");
  return static_cast<size_t>(v) * scale;
}

struct EmuEvent {
  int device = 0;
  bool timing = true;
  bool recorded = false;
  std::chrono::steady_clock::time_point at;
};

class EmuBackend final : public Backend {
 public:
  EmuBackend() {
    count_ = static_cast<int>(parse_size("EMBER_EMU_DEVICES", std::getenv("EMBER_EMU_DEVICES"), 1));
    capacity_ = parse_size("EMBER_EMU_MEMORY", std::getenv("EMBER_EMU_MEMORY"), size_t(4) << 30);
    sms_ = static_cast<int>(parse_size("EMBER_EMU_SMS", std::getenv("EMBER_EMU_SMS"), 8));
    used_.assign(static_cast<size_t>(count_), 0);
  }

  DeviceType type() const override { return DeviceType::EMU; }
  Availability availability() override {
    return {
        true,
        detail::str_cat(count_, " device", count_ == 1 ? "" : "s", ", ", simt::options().workers,
                        " worker thread", simt::options().workers == 1 ? "" : "s",
                        ", thread order ", simt::order_name(simt::options().order)),
        0, 0};
  }
  int device_count() override { return count_; }

  DeviceProps properties(int device) override {
    check(device);
    DeviceProps p;
    p.name = "Ember SIMT emulator";
    p.major = 9;
    p.minor = 0;
    p.total_memory = capacity_;
    p.multiprocessors = sms_;
    p.warp_size = simt::kWarpSize;
    p.max_threads_per_block = simt::kMaxThreadsPerBlock;
    p.max_grid_y = p.max_grid_z = static_cast<int>(simt::options().max_grid_yz);
    p.shared_mem_per_block = simt::kSharedPerBlock;
    p.shared_mem_per_block_optin = simt::options().shared_optin;
    return p;
  }
  MemInfo mem_info(int device) override {
    check(device);
    std::lock_guard<std::mutex> lock(mutex_);
    return {capacity_ - used_[device], capacity_};
  }
  void set_device(int device) override { check(device); }

  void* malloc(int device, size_t bytes) override {
    check(device);
    const size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
    std::lock_guard<std::mutex> lock(mutex_);
    if (rounded > capacity_ - used_[device]) return nullptr;
    void* p = std::aligned_alloc(256, rounded);
    if (!p) return nullptr;
    used_[device] += rounded;
    sizes_[p] = {device, rounded};
    return p;
  }
  void free(int, void* ptr) noexcept override {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(ptr);
    if (it == sizes_.end()) return;  // not ours: nothing sensible to do in a noexcept path
    used_[it->second.first] -= it->second.second;
    sizes_.erase(it);
    std::free(ptr);
  }

  void memcpy(void* dst, const void* src, size_t bytes, CopyKind kind) override {
    if (kind == CopyKind::HostToDevice) note_host_to_device_copy();  // as cudaMemcpy's (gpu.h)
    memcpy_async(dst, src, bytes, kind, nullptr);
  }
  void memcpy_async(void* dst, const void* src, size_t bytes, CopyKind kind, Stream) override {
    if (kind == CopyKind::DeviceToHost) note_device_to_host_copy();
    if (bytes) std::memmove(dst, src, bytes);
  }
  void memset(void* ptr, int value, size_t bytes) override {
    if (bytes) std::memset(ptr, value, bytes);
  }
  void memset_async(void* ptr, int value, size_t bytes, Stream) override {
    memset(ptr, value, bytes);
  }

  // A stream is a token: work on it has finished by the time the enqueueing call returns.
  Stream stream_create(int device) override {
    check(device);
    return new int(device);
  }
  void stream_destroy(Stream s) noexcept override { delete static_cast<int*>(s); }
  void stream_synchronize(Stream) override { note_synchronization(); }
  void stream_wait_event(Stream, Event) override {}
  void device_synchronize(int device) override {
    check(device);
    note_synchronization();
  }

  Event event_create(int device, bool timing) override {
    check(device);
    EmuEvent* e = new EmuEvent;
    e->device = device;
    e->timing = timing;
    return e;
  }
  void event_destroy(Event e) noexcept override { delete static_cast<EmuEvent*>(e); }
  void event_record(Event e, Stream) override {
    EmuEvent* ev = static_cast<EmuEvent*>(e);
    ev->recorded = true;
    ev->at = std::chrono::steady_clock::now();
  }
  void event_synchronize(Event) override { note_synchronization(); }
  bool event_query(Event) override { return true; }  // work is done when its call returns
  float event_elapsed_ms(Event a, Event b) override {
    const EmuEvent* s = static_cast<const EmuEvent*>(a);
    const EmuEvent* e = static_cast<const EmuEvent*>(b);
    if (!s->timing || !e->timing)
      EMBER_THROW(CudaError,
                  "CUDA error cudaErrorInvalidResourceHandle (invalid resource handle) "
                  "in event_elapsed_ms on emu: an event was created without timing");
    if (!s->recorded || !e->recorded)
      EMBER_THROW(CudaError,
                  "CUDA error cudaErrorInvalidResourceHandle (invalid resource handle) "
                  "in event_elapsed_ms on emu: an event was never recorded");
    return std::chrono::duration<float, std::milli>(e->at - s->at).count();
  }
  // Launch failures are thrown by the launch itself (simt::run_launch); nothing is left pending.
  void check_last_error(const char*) override {}

 private:
  void check(int device) const {
    if (device < 0 || device >= count_)
      EMBER_THROW(CudaError,
                  "CUDA error cudaErrorInvalidDevice (invalid device ordinal): emu:", device,
                  " does not exist (", count_, " emulated device", count_ == 1 ? "" : "s", ")");
  }

  int count_ = 1;
  size_t capacity_ = 0;
  int sms_ = 8;
  std::mutex mutex_;
  std::vector<size_t> used_;
  std::unordered_map<void*, std::pair<int, size_t>> sizes_;
};

}  // namespace

Backend& emu_backend() {
  static EmuBackend b;
  return b;
}

}  // namespace ember::gpu

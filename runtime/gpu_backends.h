// Internal: the backend objects behind the GPU facade. Each is defined in exactly one file of
// the build (the real one, or an "absent" one that explains why it is unavailable).
#pragma once

#include <cstdlib>
#include <string>

#include "runtime/gpu.h"

namespace ember::gpu {

Backend& cuda_backend();
Backend& emu_backend();

// A backend that is not available in this build: availability() gives `reason`, every other
// call throws DeviceError with it.
class AbsentBackend : public Backend {
 public:
  AbsentBackend(DeviceType type, std::string reason) : type_(type), reason_(std::move(reason)) {}
  DeviceType type() const override { return type_; }
  Availability availability() override { return {false, reason_, 0, 0}; }
  int device_count() override { return 0; }
  DeviceProps properties(int) override { fail(); }
  MemInfo mem_info(int) override { fail(); }
  void set_device(int) override { fail(); }
  void* malloc(int, size_t) override { fail(); }
  void free(int, void*) noexcept override {}
  void memcpy(void*, const void*, size_t, CopyKind) override { fail(); }
  void memcpy_async(void*, const void*, size_t, CopyKind, Stream) override { fail(); }
  void memset(void*, int, size_t) override { fail(); }
  void memset_async(void*, int, size_t, Stream) override { fail(); }
  Stream stream_create(int) override { fail(); }
  void stream_destroy(Stream) noexcept override {}
  void stream_synchronize(Stream) override { fail(); }
  void stream_wait_event(Stream, Event) override { fail(); }
  void device_synchronize(int) override { fail(); }
  Event event_create(int, bool) override { fail(); }
  void event_destroy(Event) noexcept override {}
  void event_record(Event, Stream) override { fail(); }
  void event_synchronize(Event) override { fail(); }
  bool event_query(Event) override { fail(); }
  float event_elapsed_ms(Event, Event) override { fail(); }
  void check_last_error(const char*) override {}

 private:
  [[noreturn]] void fail() const;
  DeviceType type_;
  std::string reason_;
};

}  // namespace ember::gpu

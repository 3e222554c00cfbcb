// The GPU facade: the only interface through which Ember talks to a GPU runtime.
//
// Two implementations sit behind it: the real CUDA runtime (runtime/gpu_cuda.cpp, cudart) and the
// SIMT emulator (runtime/simt, the `emu` device). Everything above runtime/ - allocators, tensors,
// ops - calls these functions and never the CUDA API, so the same code path serves `cuda` and
// `emu`. Every call checks its status and throws ember::CudaError naming the statement,
// file:line and device; nothing here exits or aborts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/device.h"

namespace ember::gpu {

// An opaque stream or event handle of a backend; nullptr is the default (legacy) stream.
using Stream = void*;
using Event = void*;

enum class CopyKind { HostToHost, HostToDevice, DeviceToHost, DeviceToDevice };

struct DeviceProps {
  std::string name;
  int major = 0, minor = 0;  // compute capability
  size_t total_memory = 0;
  int multiprocessors = 0;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_grid_y = 65535, max_grid_z = 65535;     // gridDim.y and gridDim.z limits
  size_t shared_mem_per_block = 48 * 1024;        // default limit
  size_t shared_mem_per_block_optin = 48 * 1024;  // opt-in limit (larger on Volta and later)
  int clock_khz = 0;
  int memory_bus_bits = 0;
};

// Whether a backend can be used here, and if not, why (a sentence for the user).
struct Availability {
  bool usable = false;
  std::string reason;
  int runtime_version = 0;  // CUDA runtime built against (e.g. 13000), 0 if not applicable
  int driver_version = 0;   // installed driver's CUDA version, 0 when no driver
};

struct MemInfo {
  size_t free = 0, total = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  virtual Availability availability() = 0;
  virtual int device_count() = 0;
  virtual DeviceProps properties(int device) = 0;
  virtual MemInfo mem_info(int device) = 0;
  virtual void set_device(int device) = 0;

  // Returns nullptr when the device is out of memory; throws CudaError on any other failure.
  virtual void* malloc(int device, size_t bytes) = 0;
  virtual void free(int device, void* ptr) noexcept = 0;

  virtual void memcpy(void* dst, const void* src, size_t bytes, CopyKind kind) = 0;
  virtual void memcpy_async(void* dst, const void* src, size_t bytes, CopyKind kind,
                            Stream stream) = 0;
  virtual void memset(void* ptr, int value, size_t bytes) = 0;
  virtual void memset_async(void* ptr, int value, size_t bytes, Stream stream) = 0;

  virtual Stream stream_create(int device) = 0;
  virtual void stream_destroy(Stream stream) noexcept = 0;
  virtual void stream_synchronize(Stream stream) = 0;
  virtual void stream_wait_event(Stream stream, Event event) = 0;
  virtual void device_synchronize(int device) = 0;

  virtual Event event_create(int device, bool timing = true) = 0;
  virtual void event_destroy(Event event) noexcept = 0;
  virtual void event_record(Event event, Stream stream) = 0;
  virtual void event_synchronize(Event event) = 0;
  // Whether the work before the event's record has finished; never waits (cudaEventQuery).
  virtual bool event_query(Event event) = 0;
  virtual float event_elapsed_ms(Event start, Event end) = 0;

  // Throws CudaError if the last kernel launch on this thread failed (`what` names it).
  virtual void check_last_error(const char* what) = 0;
};

// The backend for `cuda` or `emu`. Always returns an object: a backend that is not compiled in
// reports usable = false with the reason, and its other calls throw DeviceError.
Backend& backend(DeviceType type);

// Throws DeviceError unless `d` is a usable cuda/emu device with a valid index; the message
// says why (no driver, old driver with both versions, no device, index out of range, not built
// with CUDA).
void require_device(Device d);

// Convenience forms of the backend calls for a device.
inline Backend& backend(Device d) { return backend(d.type); }

// Note [The current stream]
// Every op launches its kernels on the current stream of its tensors' device, a per-thread,
// per-device setting (as PyTorch's current stream): nullptr, the device's default stream, until
// set. The caching allocator keys blocks by the stream given at allocation, which ops leave at
// the default; work on another stream must be ordered with events against the default stream
// by whoever set it (StreamGuard does not). The cpu's current stream is always nullptr, and
// kernels there ignore it.
Stream current_stream(Device d);
// requires: d is a cuda or emu device with index < 64 (DeviceError otherwise).
void set_current_stream(Device d, Stream s);

// Makes `s` the current stream of `d` on this thread for the guard's lifetime.
class StreamGuard {
 public:
  StreamGuard(Device d, Stream s) : device_(d), previous_(current_stream(d)) {
    set_current_stream(d, s);
  }
  ~StreamGuard() { set_current_stream(device_, previous_); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Device device_;
  Stream previous_;
};

// Note [Host waits]: how often the host has waited for a GPU device (cuda or emu) in this
// process: device-to-host copies (which wait for the copy, and for the work before it), stream,
// device and event synchronisations, and, apart, synchronous host-to-device copies (cudaMemcpy
// from pageable memory waits for the work before it too; Tensor::fill_ with a non-zero value and
// tensors made from host data go this way, among them backward()'s seed gradient of ones).
// Counted by both backends, for tests that prove a path never waits (an AMP training step,
// nn/amp.h) and for learners who want to see it.
struct HostWaits {
  uint64_t device_to_host_copies = 0;
  uint64_t synchronizations = 0;
  uint64_t host_to_device_copies = 0;  // synchronous ones
};
HostWaits host_waits();
// Called by the backends (runtime/gpu_cuda.cpp, runtime/simt/gpu_emu.cpp).
void note_device_to_host_copy();
void note_host_to_device_copy();
void note_synchronization();

// The CUDA runtime's version the build was compiled against, and the installed driver's
// (0 when there is none); both 0 in builds without CUDA.
int cuda_runtime_version();
int cuda_driver_version();
// "13.0" from 13000.
std::string cuda_version_string(int v);

}  // namespace ember::gpu

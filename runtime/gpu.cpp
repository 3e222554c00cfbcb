#include "runtime/gpu.h"

#include <atomic>

#include "runtime/error.h"
#include "runtime/gpu_backends.h"

namespace ember::gpu {

Backend& backend(DeviceType type) {
  switch (type) {
    case DeviceType::CUDA: return cuda_backend();
    case DeviceType::EMU: return emu_backend();
    case DeviceType::CPU: break;
  }
  EMBER_THROW(DeviceError, "the GPU facade has no backend for device type cpu");
}

namespace {
constexpr int kMaxStreamDevices = 64;
// [0]: cuda, [1]: emu.
thread_local Stream t_current_stream[2][kMaxStreamDevices] = {};
}  // namespace

Stream current_stream(Device d) {
  if (!d.is_gpu_like() || d.index < 0 || d.index >= kMaxStreamDevices) return nullptr;
  return t_current_stream[d.is_cuda() ? 0 : 1][d.index];
}

void set_current_stream(Device d, Stream s) {
  EMBER_CHECK_DEVICE(d.is_gpu_like() && d.index >= 0 && d.index < kMaxStreamDevices,
                     "set_current_stream: expected a cuda or emu device with an index below ",
                     kMaxStreamDevices, ", got ", d);
  t_current_stream[d.is_cuda() ? 0 : 1][d.index] = s;
}

void require_device(Device d) {
  EMBER_CHECK_DEVICE(d.is_gpu_like(), "expected a cuda or emu device, got ", d);
  Backend& b = backend(d.type);
  Availability a = b.availability();
  EMBER_CHECK_DEVICE(a.usable, "device ", d, " is not usable: ", a.reason);
  int n = b.device_count();
  EMBER_CHECK_DEVICE(d.index >= 0 && d.index < n, "device ", d, " does not exist: ", n, " ",
                     device_type_name(d.type), " device", n == 1 ? "" : "s",
                     " present (valid indices 0..", n - 1, ")");
}

namespace {
std::atomic<uint64_t> g_device_to_host{0}, g_synchronizations{0}, g_host_to_device{0};
}  // namespace

HostWaits host_waits() {
  return {g_device_to_host.load(), g_synchronizations.load(), g_host_to_device.load()};
}
void note_host_to_device_copy() {
  ++g_host_to_device;
}
void note_device_to_host_copy() {
  ++g_device_to_host;
}
void note_synchronization() {
  ++g_synchronizations;
}

std::string cuda_version_string(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace ember::gpu

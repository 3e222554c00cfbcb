// Devices: `cpu`, `cuda:N` (a real GPU) and `emu:N` (the SIMT emulator, a simulated GPU).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace ember {

enum class DeviceType : uint8_t { CPU, CUDA, EMU };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
  // Parses "cpu", "cuda", "cuda:1", "emu", "emu:0" and "auto". Throws DeviceError.
  static Device parse(const std::string& s);
  // The first usable `cuda` device, else `cpu`. Prints its choice (and, for cpu, why) once per
  // process to stderr.
  static Device best();

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool is_emu() const { return type == DeviceType::EMU; }
  // cuda and emu: memory behind the GPU facade and its caching allocator.
  bool is_gpu_like() const { return type != DeviceType::CPU; }
  std::string str() const;

  bool operator==(const Device& o) const {
    return type == o.type && (type == DeviceType::CPU || index == o.index);
  }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

constexpr Device kCPU{DeviceType::CPU, 0};

const char* device_type_name(DeviceType t);
std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace ember

#include "runtime/device.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "runtime/error.h"
#include "runtime/gpu.h"

namespace ember {

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda";
    case DeviceType::EMU: return "emu";
  }
  return "unknown";
}

std::string Device::str() const {
  if (type == DeviceType::CPU) return "cpu";
  return std::string(device_type_name(type)) + ":" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

Device Device::parse(const std::string& s) {
  if (s == "auto") return best();
  if (s == "cpu") return kCPU;
  std::string kind = s, idx;
  auto colon = s.find(':');
  if (colon != std::string::npos) {
    kind = s.substr(0, colon);
    idx = s.substr(colon + 1);
  }
  DeviceType t;
  if (kind == "cuda")
    t = DeviceType::CUDA;
  else if (kind == "emu")
    t = DeviceType::EMU;
  else if (kind == "cpu" && (idx.empty() || idx == "0"))
    return kCPU;
  else
    EMBER_THROW(DeviceError, "unknown device '", s,
                "': expected cpu, cuda, cuda:N, emu, emu:N or auto");
  int index = 0;
  if (colon != std::string::npos) {
    EMBER_CHECK_DEVICE(!idx.empty() && idx.size() < 6 &&
                           idx.find_first_not_of("0123456789") == std::string::npos,
                       "bad device index in '", s, "': expected a non-negative integer");
    index = std::atoi(idx.c_str());
  }
  return Device(t, index);
}

Device Device::best() {
  static std::once_flag once;
  static Device chosen;
  std::call_once(once, [] {
    gpu::Availability a = gpu::backend(DeviceType::CUDA).availability();
    if (a.usable) {
      chosen = Device(DeviceType::CUDA, 0);
      std::fprintf(stderr, "ember: using cuda:0 (%s)\n",
                   gpu::backend(DeviceType::CUDA).properties(0).name.c_str());
    } else {
      chosen = kCPU;
      std::fprintf(stderr, "ember: using cpu (CUDA not usable: %s)\n", a.reason.c_str());
    }
  });
  return chosen;
}

}  // namespace ember

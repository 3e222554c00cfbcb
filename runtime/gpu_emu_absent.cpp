// The `emu` device until the SIMT emulator is part of the build.
#include "runtime/gpu_backends.h"

namespace ember::gpu {

Backend& emu_backend() {
  static AbsentBackend b(DeviceType::EMU, "this build has no SIMT emulator yet");
  return b;
}

}  // namespace ember::gpu

// The `cuda` device in a build configured without CUDA (EMBER_CUDA=OFF or no nvcc).
#include "runtime/gpu_backends.h"

namespace ember::gpu {

Backend& cuda_backend() {
  static AbsentBackend b(DeviceType::CUDA,
                         "Ember was built without CUDA (reconfigure with EMBER_CUDA=ON and nvcc)");
  return b;
}
int cuda_runtime_version() { return 0; }
int cuda_driver_version() { return 0; }

}  // namespace ember::gpu

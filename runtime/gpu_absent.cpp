#include "runtime/error.h"
#include "runtime/gpu_backends.h"

namespace ember::gpu {

void AbsentBackend::fail() const {
  EMBER_THROW(DeviceError, device_type_name(type_), " is not available: ", reason_);
}

}  // namespace ember::gpu

// The NCCL backend of a build without it: every entry point says why.
#include "dist/backends.h"
#include "ember/build_config.h"

namespace ember::dist {

std::string nccl_missing_reason() {
  return EMBER_HAVE_CUDA ? "this build of Ember has no NCCL backend: NCCL (nccl.h, libnccl) was "
                           "not found beside the CUDA toolkit when it was configured"
                         : "this build of Ember has no NCCL backend: it was built without CUDA";
}

ProcessGroupPtr make_nccl_group(const Launch&, std::chrono::milliseconds, Device device) {
  EMBER_CHECK_T(DeviceError, !device.is_emu(),
                "the nccl backend is not supported on emu: NCCL drives real GPUs; use "
                "backend='mpi', which carries host copies of emu tensors");
  EMBER_THROW(DistError, nccl_missing_reason(), "; use backend='mpi'");
}

}  // namespace ember::dist

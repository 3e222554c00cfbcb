// Builds without cuDNN (or without CUDA) report no GPU library versions.
#include "runtime/cudnn_versions.h"
#include "runtime/env.h"

namespace ember {
GpuLibVersions gpu_lib_versions() { return {}; }
CudnnLibs loaded_cudnn_libs() {
  return {};
}
}  // namespace ember

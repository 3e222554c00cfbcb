// Builds without cuDNN (or without CUDA) report no GPU library versions.
#include "runtime/env.h"

namespace ember {
GpuLibVersions gpu_lib_versions() { return {}; }
}  // namespace ember

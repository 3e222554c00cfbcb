// Versions of cuDNN and cuBLAS: the headers this build was compiled with, and the libraries
// actually loaded (they can differ when the loader finds another copy).
#include <cublas_api.h>
#include <cudnn.h>

#include "runtime/env.h"

namespace ember {

GpuLibVersions gpu_lib_versions() {
  GpuLibVersions v;
  v.cudnn_header = CUDNN_VERSION;
  v.cudnn_loaded = static_cast<int>(cudnnGetVersion());
  v.cublas_header = CUBLAS_VERSION;
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    v.cublas_loaded = major * 10000 + minor * 100 + patch;
  return v;
}

}  // namespace ember

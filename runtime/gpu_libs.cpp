// Versions of cuDNN and cuBLAS: the headers this build was compiled with, and the libraries
// actually loaded (they can differ when the loader finds another copy).
#include <cudnn.h>
#include <dlfcn.h>

#include "runtime/cublas_api.h"
#include "runtime/cudnn_versions.h"
#include "runtime/env.h"
#include "runtime/error.h"

namespace ember {

GpuLibVersions gpu_lib_versions() {
  GpuLibVersions v;
  v.cudnn_header = CUDNN_VERSION;
  v.cudnn_loaded = static_cast<int>(cudnnGetVersion());
  v.cublas_header = CUBLAS_VERSION;
  try {  // loads cuBLAS (Note [cuBLAS loaded on first use]); 0 when it cannot be loaded
    const CublasApi& api = cublas_api();
    int major = 0, minor = 0, patch = 0;
    if (api.get_property(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
        api.get_property(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
        api.get_property(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
      v.cublas_loaded = major * 10000 + minor * 100 + patch;
  } catch (const CublasError& e) {
    v.cublas_error = e.what();
  }
  return v;
}

namespace {

std::string check(cudnnStatus_t st) {
  return st == CUDNN_STATUS_SUCCESS ? std::string() : std::string(cudnnGetErrorString(st));
}

// Whether the loader finds NVRTC of the CUDA major cuDNN was built for (or any).
bool nvrtc_loadable(int cudart) {
  for (const std::string& name :
       {"libnvrtc.so." + std::to_string(cudart / 1000), std::string("libnvrtc.so")}) {
    if (void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(h);
      return true;
    }
  }
  return false;
}

}  // namespace

CudnnLibs loaded_cudnn_libs() {
  CudnnLibs l;
  l.compiled = CUDNN_VERSION;
  l.loaded = static_cast<int>(cudnnGetVersion());
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cudnnGetVersion), &info) != 0 && info.dli_fname != nullptr)
    l.path = info.dli_fname;
  l.cudart = static_cast<int>(cudnnGetCudartVersion());
  l.max_device = static_cast<int>(cudnnGetMaxDeviceVersion());
  l.sublibs = {{"graph", check(cudnnGraphVersionCheck())},
               {"ops", check(cudnnOpsVersionCheck())},
               {"cnn", check(cudnnCnnVersionCheck())},
               {"adv", check(cudnnAdvVersionCheck())}};
  l.nvrtc = nvrtc_loadable(l.cudart);
  return l;
}

}  // namespace ember

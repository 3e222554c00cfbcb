// EMBER_CUDA_CHECK: run a CUDA runtime call and throw ember::CudaError on failure, with the
// statement, file:line, current device and CUDA's own error name and text. Only for files built
// with the CUDA toolkit (the real GPU facade, cuDNN/cuBLAS backends).
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/error.h"

namespace ember::detail {
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* stmt, const char* file, int line);
}  // namespace ember::detail

#define EMBER_CUDA_CHECK(stmt)                                                  \
  do {                                                                          \
    cudaError_t ember_err_ = (stmt);                                            \
    if (ember_err_ != cudaSuccess)                                              \
      ::ember::detail::throw_cuda_error(ember_err_, #stmt, __FILE__, __LINE__); \
  } while (0)

// For destructors and other noexcept paths: reports nothing, clears the error.
#define EMBER_CUDA_CHECK_NOTHROW(stmt) \
  do {                                 \
    if ((stmt) != cudaSuccess) (void)cudaGetLastError(); \
  } while (0)

namespace ember::detail {

// Makes cuda device `device` current for a scope, restoring the previous one (the GPU facade's
// calls, and the library backends, whose handles belong to one device).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    EMBER_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device) EMBER_CUDA_CHECK(cudaSetDevice(device));
    dev_ = device;
  }
  ~DeviceScope() {
    if (prev_ != dev_) EMBER_CUDA_CHECK_NOTHROW(cudaSetDevice(prev_));
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = 0, dev_ = 0;
};

}  // namespace ember::detail

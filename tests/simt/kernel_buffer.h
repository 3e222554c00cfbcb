// What a test needs to run its own kernels on the emulator and, compiled again by nvcc, on a GPU
// (Note [Tensor Core tests on hardware]): memory both the test and its kernels touch, a wait for
// the kernels, and the thread orders to run in.
//
// Note [Tensor Core tests on hardware]: test_mma.cpp checks the emulator's Tensor Core
// instructions against the PTX ISA's tables. The `gpu` test executable compiles it again with
// nvcc (simt/test_mma_gpu.cu, one line that includes it), where EMBER_EMULATED is 0: buffers are
// CUDA managed memory, kernels run on cuda:0, and the same tables are checked against the
// hardware, which is what the emulator's maps claim to copy.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/cuda/compat.h"
#if EMBER_EMULATED
#include "simt/simt_test_util.h"
#endif

namespace ember::simt_test {

#if EMBER_EMULATED

constexpr bool kOnGpu = false;
template <typename T>
using KernelBuffer = std::vector<T>;
inline void finish_kernels() {}
inline std::vector<Config> kernel_orders() {
  return all_configs();
}
inline bool has_bf16_tensor_cores() {
  return true;
}

#else

constexpr bool kOnGpu = true;
// n elements of CUDA managed memory, set to v: the host and the kernels read and write the same
// pointer (after finish_kernels()).
template <typename T>
class KernelBuffer {
 public:
  explicit KernelBuffer(size_t n, T v = T()) : n_(n) {
    EMBER_CUDA_CHECK(cudaMallocManaged(reinterpret_cast<void**>(&p_), n ? n * sizeof(T) : 1));
    for (size_t i = 0; i < n; ++i) p_[i] = v;
  }
  ~KernelBuffer() { cudaFree(p_); }
  KernelBuffer(const KernelBuffer&) = delete;
  KernelBuffer& operator=(const KernelBuffer&) = delete;
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};
// Kernels run asynchronously on a GPU: wait for them before reading their output.
inline void finish_kernels() {
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
}
// Thread orders mean nothing on a GPU: one configuration, and no emulator options to set (the
// emulator's headers, simt_test_util.h's, would clash with CUDA's under nvcc).
struct Config {
  std::string name() const { return "cuda:0"; }
};
struct ScopedOptions {
  explicit ScopedOptions(const Config&) {}
};
inline std::vector<Config> kernel_orders() {
  return {Config{}};
}
// sm_75 has no bf16 Tensor Cores (the bf16 mma of kernels/cuda/tensor_core.cuh traps there).
inline bool has_bf16_tensor_cores() {
  int device = 0, major = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 8;
}

#endif

}  // namespace ember::simt_test

// What this build and this machine offer: the facts `ember doctor` prints.
#pragma once

#include <string>
#include <vector>

namespace ember {

struct GpuReport {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;
  size_t total_memory = 0;
  int multiprocessors = 0;
  bool has_code = false;  // this build carries SASS or PTX that runs on it
};

struct EnvReport {
  std::string version, build_type, compiler, sanitize, cuda_architectures;
  bool built_with_cuda = false, built_with_cudnn = false;
  int cuda_runtime_version = 0, cuda_driver_version = 0;
  int cudnn_header_version = 0, cudnn_loaded_version = 0;  // e.g. 91900; 0 if absent
  int cublas_header_version = 0, cublas_loaded_version = 0;
  std::string cublas_error;  // why cuBLAS could not be loaded ("" when it was or is not built)
  std::string cudnn_path;  // the cuDNN library loaded ("" when none or unknown)
  // Whether that cuDNN can serve Ember here (runtime/cudnn_versions.h): why not, and warnings.
  bool cudnn_usable = false;
  std::string cudnn_reason;
  std::vector<std::string> cudnn_warnings;
  bool cuda_usable = false;
  std::string cuda_reason;
  std::vector<GpuReport> gpus;
  bool emu_usable = false;
  std::string emu_reason;
  std::string cpu_model;
  std::vector<std::string> cpu_features;  // SIMD extensions the CPU has (sse4.2, avx2, ...)
  std::vector<std::string> build_simd;    // those the CPU code was compiled for (-march)
  int threads = 1;                        // OpenMP threads Ember will use
  std::string verdict;                    // "CUDA usable: no (no NVIDIA driver found); using cpu"
};

EnvReport collect_env_report();
// The cpu's model name from /proc/cpuinfo ("unknown" when it says none).
std::string cpu_model_name();
std::string env_report_text(const EnvReport& r);
std::string env_report_json(const EnvReport& r);

// Versions of the GPU libraries this build links (0 where absent); see runtime/gpu_libs.cpp.
struct GpuLibVersions {
  int cudnn_header = 0, cudnn_loaded = 0, cublas_header = 0, cublas_loaded = 0;
  std::string cublas_error;  // why cuBLAS could not be loaded ("" when it was)
};
GpuLibVersions gpu_lib_versions();

}  // namespace ember

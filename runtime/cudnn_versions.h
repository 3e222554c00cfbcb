// Whether the cuDNN this process loaded can serve Ember: the versions the loader found, and the
// verdict on them, as plain data so the rules can be tested on made-up version sets. `ember
// doctor` prints the verdict; the cuDNN backend consults it on first use and says once why
// cuDNN is off.
//
// The rules (docs/gpu_backend.md, "cuDNN versions"):
//   - the loaded library's major version equals the compiled one and its minor is no older (cuDNN
//     keeps its ABI within a major version, and a newer minor serves an older build);
//   - every sub-library (graph, ops, cnn, adv) passes its own version check;
//   - the NVIDIA driver supports the CUDA runtime cuDNN was built for (its major release; a newer
//     minor release is a warning: CUDA's minor-version compatibility);
//   - no GPU is newer than the newest compute capability the library knows;
//   - NVRTC loadable, or cuDNN's runtime-compiled engines are missing (a warning, not a refusal).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ember {

struct CudnnLibs {
  int compiled = 0;    // CUDNN_VERSION of the headers, e.g. 91900; 0 in a build without cuDNN
  int loaded = 0;      // cudnnGetVersion() of the library loaded
  std::string path;    // where the loader found it ("" when unknown)
  int cudart = 0;      // cudnnGetCudartVersion(): the CUDA runtime it was built for, e.g. 13000
  int max_device = 0;  // cudnnGetMaxDeviceVersion(): the newest compute capability x 100 (1210)
  // Each sub-library's version check: its name and "" when it passed, else the status's name.
  std::vector<std::pair<std::string, std::string>> sublibs;
  bool nvrtc = false;  // libnvrtc can be loaded (cuDNN compiles some engines at run time)
};

struct CudnnVerdict {
  bool usable = false;
  std::string reason;                 // why not, with the versions and the fix; "" when usable
  std::vector<std::string> warnings;  // usable, but with something missing
};

// The verdict for `libs` with an NVIDIA driver that supports CUDA `driver` (e.g. 13000; 0 when
// there is no driver) and GPUs of these compute capabilities (major, minor).
CudnnVerdict cudnn_verdict(const CudnnLibs& libs, int driver,
                           const std::vector<std::pair<int, int>>& gpus);

// What this process loaded (runtime/gpu_libs.cpp; empty in a build without cuDNN).
CudnnLibs loaded_cudnn_libs();

// "9.19.0" for 91900 (cuDNN's and cuBLAS's major * 10000 + minor * 100 + patch), "none" for 0.
std::string library_version_string(int v);

}  // namespace ember

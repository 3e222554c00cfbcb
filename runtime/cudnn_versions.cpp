// The cuDNN version rules (runtime/cudnn_versions.h).
#include "runtime/cudnn_versions.h"

#include "runtime/gpu.h"

namespace ember {

std::string library_version_string(int v) {
  if (v <= 0) return "none";
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

namespace {

std::string major_minor(int v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100);
}

std::string capability(int v) {  // 1210 -> "12.1"
  return std::to_string(v / 100) + "." + std::to_string(v / 10 % 10);
}

}  // namespace

CudnnVerdict cudnn_verdict(const CudnnLibs& libs, int driver,
                           const std::vector<std::pair<int, int>>& gpus) {
  CudnnVerdict v;
  auto refuse = [&](std::string why) {
    v.reason = std::move(why);
    return v;
  };
  if (libs.compiled == 0) return refuse("this build has no cuDNN (configured without it)");
  const std::string built = library_version_string(libs.compiled);
  const std::string at = libs.path.empty() ? "" : " at " + libs.path;
  if (libs.loaded == 0) return refuse("cuDNN " + built + " was not loaded");
  if (libs.loaded / 10000 != libs.compiled / 10000 || libs.loaded < libs.compiled / 100 * 100)
    return refuse("found cuDNN " + library_version_string(libs.loaded) + at +
                  " but Ember was built with " + built + "; put cuDNN " +
                  major_minor(libs.compiled) + " or a newer " +
                  std::to_string(libs.compiled / 10000) + ".x first on LD_LIBRARY_PATH");
  for (const auto& [name, status] : libs.sublibs)
    if (!status.empty())
      return refuse("cuDNN's " + name + " library failed its version check (" + status +
                    "): it does not match cuDNN " + library_version_string(libs.loaded) + at +
                    "; install one cuDNN release's libraries together");
  if (driver == 0) return refuse("no NVIDIA driver: cuDNN runs on cuda devices only");
  // CUDA's minor-version compatibility: a library built for 13.1 runs on a driver for 13.0 (the
  // same major release), so only an older major release refuses; a newer minor warns.
  const std::string built_for = "cuDNN " + library_version_string(libs.loaded) +
                                " was built for CUDA " + gpu::cuda_version_string(libs.cudart) +
                                " but the NVIDIA driver supports CUDA " +
                                gpu::cuda_version_string(driver);
  if (libs.cudart / 1000 > driver / 1000) return refuse(built_for + "; update the driver");
  if (libs.cudart > driver)
    v.warnings.push_back(built_for +
                         ": it runs under CUDA's minor-version compatibility, without what the "
                         "newer runtime added (update the driver for those)");
  for (size_t i = 0; i < gpus.size(); ++i) {
    const int cc = gpus[i].first * 100 + gpus[i].second * 10;
    if (libs.max_device > 0 && cc > libs.max_device)
      return refuse("cuda:" + std::to_string(i) + " (compute " + capability(cc) +
                    ") is newer than cuDNN " + library_version_string(libs.loaded) +
                    " supports (compute " + capability(libs.max_device) +
                    " at most); install a newer cuDNN");
  }
  if (!libs.nvrtc)
    v.warnings.push_back(
        "libnvrtc not found: cuDNN's runtime-compiled engines are unavailable (install the CUDA "
        "toolkit's NVRTC for them)");
  v.usable = true;
  return v;
}

}  // namespace ember

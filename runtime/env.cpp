#include "runtime/env.h"

#include <omp.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ember/build_config.h"
#include "runtime/cudnn_versions.h"
#include "runtime/error.h"
#include "runtime/gpu.h"

namespace ember {
namespace {

std::string read_cpu_model_once() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) return line.substr(c + 2);
    }
  return "unknown";
}

std::vector<std::string> cpu_features() {
  std::vector<std::string> out;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  struct F { const char* name; int has; };
  const F feats[] = {{"sse4.2", __builtin_cpu_supports("sse4.2")},
                     {"avx", __builtin_cpu_supports("avx")},
                     {"avx2", __builtin_cpu_supports("avx2")},
                     {"fma", __builtin_cpu_supports("fma")},
                     {"avx512f", __builtin_cpu_supports("avx512f")},
                     {"avx512bw", __builtin_cpu_supports("avx512bw")},
                     {"avx512vnni", __builtin_cpu_supports("avx512vnni")}};
  for (const auto& f : feats)
    if (f.has) out.push_back(f.name);
#endif
  return out;
}

// The SIMD extensions this build's CPU code was compiled for (-march): what the vectorised
// loops and Eigen can use, whatever the CPU offers beyond them.
std::vector<std::string> build_simd() {
  std::vector<std::string> out;
#ifdef __SSE4_2__
  out.push_back("sse4.2");
#endif
#ifdef __AVX__
  out.push_back("avx");
#endif
#ifdef __AVX2__
  out.push_back("avx2");
#endif
#ifdef __FMA__
  out.push_back("fma");
#endif
#ifdef __AVX512F__
  out.push_back("avx512f");
#endif
#ifdef __AVX512BW__
  out.push_back("avx512bw");
#endif
#ifdef __AVX512VNNI__
  out.push_back("avx512vnni");
#endif
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& f : v) s += (s.empty() ? "" : " ") + f;
  return s;
}

// True when the build's architecture list carries code that runs on compute capability M.m:
// SASS for the same major version and a minor <= m, or PTX (JIT) for an older architecture.
bool build_has_code_for(int major, int minor) {
  std::stringstream ss(EMBER_CUDA_ARCHITECTURES);
  std::string item;
  int cc = major * 10 + minor;
  while (std::getline(ss, item, ';')) {
    if (item.empty()) continue;
    std::string digits;
    for (char c : item)
      if (isdigit(static_cast<unsigned char>(c))) digits += c;
      else break;
    if (digits.empty()) continue;
    int arch = std::stoi(digits);
    bool virt_only = item.find("-virtual") != std::string::npos;
    bool real_only = item.find("-real") != std::string::npos;
    if (!virt_only && arch / 10 == major && arch % 10 <= minor) return true;
    if (!real_only && arch <= cc) return true;  // PTX is embedded unless "-real"
  }
  return false;
}

}  // namespace

std::string cpu_model_name() {
  static const std::string model = read_cpu_model_once();  // it does not change while running
  return model;
}

EnvReport collect_env_report() {
  EnvReport r;
  r.version = EMBER_VERSION_STRING;
  r.build_type = EMBER_BUILD_TYPE;
  r.compiler = EMBER_CXX_COMPILER;
  r.sanitize = EMBER_SANITIZE_MODE;
  r.built_with_cuda = EMBER_HAVE_CUDA;
  r.built_with_cudnn = EMBER_HAVE_CUDNN;
  r.cuda_architectures = r.built_with_cuda ? EMBER_CUDA_ARCHITECTURES : "";
  r.cuda_runtime_version = gpu::cuda_runtime_version();
  r.cuda_driver_version = gpu::cuda_driver_version();
  GpuLibVersions libs = gpu_lib_versions();
  r.cudnn_header_version = libs.cudnn_header;
  r.cudnn_loaded_version = libs.cudnn_loaded;
  r.cublas_header_version = libs.cublas_header;
  r.cublas_loaded_version = libs.cublas_loaded;
  r.cublas_error = libs.cublas_error;
  const CudnnLibs cudnn = loaded_cudnn_libs();
  r.cudnn_path = cudnn.path;

  gpu::Backend& cuda = gpu::backend(DeviceType::CUDA);
  gpu::Availability a = cuda.availability();
  r.cuda_usable = a.usable;
  r.cuda_reason = a.reason;
  if (a.usable) {
    for (int i = 0; i < cuda.device_count(); ++i) {
      gpu::DeviceProps p = cuda.properties(i);
      r.gpus.push_back({i, p.name, p.major, p.minor, p.total_memory, p.multiprocessors,
                        build_has_code_for(p.major, p.minor)});
    }
  }
  std::vector<std::pair<int, int>> capabilities;
  for (const GpuReport& g : r.gpus) capabilities.emplace_back(g.major, g.minor);
  const CudnnVerdict verdict = cudnn_verdict(cudnn, r.cuda_driver_version, capabilities);
  r.cudnn_usable = verdict.usable;
  r.cudnn_reason = verdict.reason;
  r.cudnn_warnings = verdict.warnings;
  gpu::Availability e = gpu::backend(DeviceType::EMU).availability();
  r.emu_usable = e.usable;
  r.emu_reason = e.reason;
  r.cpu_model = cpu_model_name();
  r.cpu_features = cpu_features();
  r.build_simd = build_simd();
  r.threads = omp_get_max_threads();
  if (r.cuda_usable)
    r.verdict = "CUDA usable: yes (" + std::to_string(r.gpus.size()) + " GPU" +
                (r.gpus.size() == 1 ? "" : "s") + "); using cuda:0";
  else
    r.verdict = "CUDA usable: no (" + r.cuda_reason + "); using cpu";
  return r;
}

std::string env_report_text(const EnvReport& r) {
  std::ostringstream os;
  auto row = [&](const std::string& k, const std::string& v) {
    os << "  " << k << std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') << v << "\n";
  };
  os << "Ember " << r.version << "\n";
  os << "Build\n";
  row("build type", r.build_type);
  row("compiler", r.compiler);
  row("sanitizers", r.sanitize);
  row("CPU code for", r.build_simd.empty() ? "the baseline instruction set" : join(r.build_simd));
  row("CUDA backend", r.built_with_cuda ? "yes (architectures " + r.cuda_architectures + ")" : "no");
  row("CUDA runtime", gpu::cuda_version_string(r.cuda_runtime_version) + " (built against)");
  row("cuDNN", r.built_with_cudnn ? "header " + library_version_string(r.cudnn_header_version) +
                                        ", loaded " + library_version_string(r.cudnn_loaded_version)
                                  : "not built");
  row("cuBLAS", r.built_with_cudnn
                    ? "header " + library_version_string(r.cublas_header_version) +
                          (r.cublas_error.empty()
                               ? ", loaded " + library_version_string(r.cublas_loaded_version)
                               : ", " + r.cublas_error)
                    : (r.built_with_cuda ? "linked" : "not built"));
  os << "Machine\n";
  row("NVIDIA driver", r.cuda_driver_version ? "supports CUDA " +
                                                   gpu::cuda_version_string(r.cuda_driver_version)
                                             : "no driver");
  if (r.gpus.empty()) row("GPUs", "none");
  for (const auto& g : r.gpus)
    row("cuda:" + std::to_string(g.index),
        g.name + ", compute " + std::to_string(g.major) + "." + std::to_string(g.minor) + ", " +
            format_bytes(g.total_memory) + ", " + std::to_string(g.multiprocessors) + " SMs, " +
            (g.has_code ? "this build has code for it" : "NO CODE IN THIS BUILD for this GPU"));
  if (r.built_with_cudnn) {
    row("cuDNN usable", r.cudnn_usable ? "yes" : "no (" + r.cudnn_reason + ")");
    if (!r.cudnn_path.empty()) row("cuDNN library", r.cudnn_path);
    for (const std::string& w : r.cudnn_warnings) row("cuDNN warning", w);
  }
  row("emu (SIMT emulator)", r.emu_usable ? "available" : "unavailable: " + r.emu_reason);
  row("CPU", r.cpu_model);
  row("CPU SIMD", r.cpu_features.empty() ? "none detected" : join(r.cpu_features));
  row("CPU threads", std::to_string(r.threads));
  os << r.verdict << "\n";
  return os.str();
}

std::string env_report_json(const EnvReport& r) {
  nlohmann::json j;
  j["version"] = r.version;
  j["build"] = {{"type", r.build_type},
                {"compiler", r.compiler},
                {"sanitize", r.sanitize},
                {"simd", r.build_simd},
                {"cuda", r.built_with_cuda},
                {"cudnn", r.built_with_cudnn},
                {"cuda_architectures", r.cuda_architectures}};
  j["cuda_runtime_version"] = r.cuda_runtime_version;
  j["cuda_driver_version"] = r.cuda_driver_version;
  j["cudnn"] = {{"header", r.cudnn_header_version},
                {"loaded", r.cudnn_loaded_version},
                {"path", r.cudnn_path},
                {"usable", r.cudnn_usable},
                {"reason", r.cudnn_reason},
                {"warnings", r.cudnn_warnings}};
  j["cublas"] = {{"header", r.cublas_header_version},
                 {"loaded", r.cublas_loaded_version},
                 {"error", r.cublas_error}};
  j["cuda_usable"] = r.cuda_usable;
  j["cuda_reason"] = r.cuda_reason;
  j["gpus"] = nlohmann::json::array();
  for (const auto& g : r.gpus)
    j["gpus"].push_back({{"index", g.index},
                         {"name", g.name},
                         {"compute_capability", std::to_string(g.major) + "." + std::to_string(g.minor)},
                         {"memory_bytes", g.total_memory},
                         {"multiprocessors", g.multiprocessors},
                         {"build_has_code", g.has_code}});
  j["emu"] = {{"usable", r.emu_usable}, {"reason", r.emu_reason}};
  j["cpu"] = {{"model", r.cpu_model}, {"simd", r.cpu_features}, {"threads", r.threads}};
  j["verdict"] = r.verdict;
  return j.dump(2);
}

}  // namespace ember

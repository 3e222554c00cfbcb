// `ember doctor`: what this build and this machine offer, and which device Ember will use; and
// which CPU convolution paths this machine gets (the implicit GEMM's micro-kernels: AVX-512, AVX2
// or none, chosen at run time and capped by EMBER_CPU_ISA), and why.
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "kernels/cpu/conv2d_implicit_gemm.h"
#include "kernels/cpu/cpu_isa.h"
#include "runtime/env.h"
#include "runtime/error.h"

namespace ember::cli {
namespace {

namespace kc = kernels::cpu;

// The cpu's convolution paths. `ok` is false when EMBER_CPU_ISA is malformed (the convolutions
// would throw), with the error as the implicit GEMM's line.
struct CpuConvReport {
  bool ok = true;
  const char* isa = nullptr;  // "avx512", "avx2", or null: implicit_gemm unavailable
  std::string implicit_gemm;  // "avx512 micro-kernel (cpu has avx512f)", "unavailable: ..."
};

CpuConvReport cpu_conv_report() {
  CpuConvReport r;
  try {
    r.isa = kc::conv2d_implicit_gemm_isa();
    const std::string why = kc::cpu_isa_reason();
    r.implicit_gemm = r.isa ? std::string(r.isa) + " micro-kernel (" + why + ")"
                            : "unavailable: needs AVX2+FMA or AVX-512 (" + why +
                                  "); convolutions use im2col_gemm";
  } catch (const Error& e) {
    r.ok = false;
    r.implicit_gemm = std::string("unavailable: ") + e.what();
  }
  return r;
}

std::string row(const std::string& k, const std::string& v) {
  return "  " + k + std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') + v + "\n";
}

}  // namespace

Runner add_doctor(CLI::App& app) {
  auto* cmd = app.add_subcommand("doctor",
                                 "Report the build, the GPUs, the libraries and the CPU, "
                                 "and say which device Ember will use");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print the report as JSON");
  return [cmd, json]() -> int {
    if (!cmd->parsed()) return -1;
    EnvReport r = collect_env_report();
    const CpuConvReport conv = cpu_conv_report();
    if (*json) {
      nlohmann::json j = nlohmann::json::parse(env_report_json(r));
      j["cpu_conv"] = {{"implicit_gemm_isa", conv.isa ? nlohmann::json(conv.isa) : nullptr},
                       {"implicit_gemm", conv.implicit_gemm},
                       {"cpu_isa_detected", kc::cpu_isa_name(kc::cpu_isa_detected())},
                       {"ok", conv.ok}};
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << env_report_text(r) << "CPU convolution\n"
                << row("implicit_gemm_cpu", conv.implicit_gemm)
                << row("im2col_gemm", "always (Eigen's GEMM, built for this build's -march)")
                << row("direct", "always");
    }
    return conv.ok ? 0 : 1;  // the CPU path works unless EMBER_CPU_ISA is malformed
  };
}

}  // namespace ember::cli

// The run-time choice of the cpu micro-kernels' instruction set (kernels/cpu/cpu_isa.h). Compiled
// for the build's target like any other file: it runs before anything wider may.
#include "kernels/cpu/cpu_isa.h"

#include <atomic>
#include <cstdlib>

#include "runtime/error.h"

namespace ember::kernels::cpu {
namespace {

constexpr const char* kAllowed = "avx512, avx2, baseline";

// The set_cpu_isa_cap value: -1 for none, else a CpuIsa.
std::atomic<int> api_cap{-1};

bool parse(const std::string& v, CpuIsa* isa) {
  for (CpuIsa i : {CpuIsa::avx512, CpuIsa::avx2, CpuIsa::baseline})
    if (v == cpu_isa_name(i)) return *isa = i, true;
  return false;
}

// The features behind cpu_isa_detected(), as a reason reads them.
std::string detected_features() {
  switch (cpu_isa_detected()) {
    case CpuIsa::avx512:
      return "avx512f";
    case CpuIsa::avx2:
      return "avx2, fma, no avx512f";
    case CpuIsa::baseline:
      break;
  }
  return "no avx2+fma";
}

// The caps this CPU can take, "avx2, baseline" on an AVX2 CPU.
std::string allowed_here() {
  std::string out;
  for (CpuIsa i : {CpuIsa::avx512, CpuIsa::avx2, CpuIsa::baseline})
    if (i <= cpu_isa_detected()) out += std::string(out.empty() ? "" : ", ") + cpu_isa_name(i);
  return out;
}

// The cap in force and where it comes from ("EMBER_CPU_ISA=avx2"); false when there is none.
bool cap(CpuIsa* isa, std::string* source) {
  const int api = api_cap.load();
  if (api >= 0) {
    *isa = static_cast<CpuIsa>(api);
    *source = std::string("set_cpu_isa_cap(\"") + cpu_isa_name(*isa) + "\")";
    return true;
  }
  const char* env = std::getenv("EMBER_CPU_ISA");
  if (env == nullptr || *env == '\0') return false;
  EMBER_CHECK_VALUE(parse(env, isa), "EMBER_CPU_ISA=", env, ": expected one of ", kAllowed);
  EMBER_CHECK_VALUE(*isa <= cpu_isa_detected(), "EMBER_CPU_ISA=", env, ": this CPU has only ",
                    cpu_isa_name(cpu_isa_detected()), " (", detected_features(),
                    "); allowed here: ", allowed_here());
  *source = std::string("EMBER_CPU_ISA=") + env;
  return true;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx512:
      return "avx512";
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::baseline:
      break;
  }
  return "baseline";
}

CpuIsa cpu_isa_detected() {
#if defined(__x86_64__)
  static const CpuIsa detected = [] {
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2 && __builtin_cpu_supports("avx512f")) return CpuIsa::avx512;
    return avx2 ? CpuIsa::avx2 : CpuIsa::baseline;
  }();
  return detected;
#else
  return CpuIsa::baseline;
#endif
}

CpuIsa cpu_isa() {
  CpuIsa c = CpuIsa::avx512;
  std::string source;
  if (!cap(&c, &source)) return cpu_isa_detected();
  return c < cpu_isa_detected() ? c : cpu_isa_detected();
}

std::string cpu_isa_reason() {
  CpuIsa c;
  std::string source;
  const std::string has = "cpu has " + detected_features();
  return cap(&c, &source) ? source + "; " + has : has;
}

void set_cpu_isa_cap(const std::string& isa) {
  if (isa.empty()) return api_cap.store(-1);
  CpuIsa c;
  EMBER_CHECK_VALUE(parse(isa, &c), "set_cpu_isa_cap(\"", isa, "\"): expected one of ", kAllowed,
                    " (or \"\" to clear)");
  EMBER_CHECK_VALUE(c <= cpu_isa_detected(), "set_cpu_isa_cap(\"", isa, "\"): this CPU has only ",
                    cpu_isa_name(cpu_isa_detected()), " (", detected_features(),
                    "); allowed here: ", allowed_here());
  api_cap.store(static_cast<int>(c));
}

}  // namespace ember::kernels::cpu

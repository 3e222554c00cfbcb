// Which vector instruction set the cpu's hand-written micro-kernels (the implicit-GEMM
// convolution, kernels/cpu/conv2d_implicit_gemm.h) use: the best the CPU has, chosen at run time,
// so one binary built for baseline x86-64 (EMBER_NATIVE=OFF) runs them on every CPU. A cap
// lowers the choice, as oneDNN's ONEDNN_MAX_CPU_ISA does: for tests of every path on one
// machine, and for users who want the results of a narrower CPU.
//
//   EMBER_CPU_ISA=avx512|avx2|baseline   environment variable, read at each call
//   set_cpu_isa_cap("avx2")              API; takes precedence over the variable; "" clears it
//
// A cap above what the CPU has is an error, not a silent clamp: asking for avx512 on an AVX2
// CPU says so. The choice changes no other code (Eigen's GEMM keeps the build's -march). The
// convolution registry caches its choice per shape: after changing the cap, call
// ops::clear_conv_algo_cache().
#pragma once

#include <string>

namespace ember::kernels::cpu {

enum class CpuIsa { baseline, avx2, avx512 };

// "baseline", "avx2", "avx512".
const char* cpu_isa_name(CpuIsa isa);

// What the CPU (and the OS, which must save the wider registers) offers: avx512 with AVX-512F,
// AVX2 and FMA; avx2 with AVX2 and FMA; otherwise baseline. Always baseline off x86-64.
CpuIsa cpu_isa_detected();

// The instruction set the micro-kernels use: the detected one, lowered to the cap.
// throws: ValueError when EMBER_CPU_ISA is set to something other than avx512, avx2 or baseline,
//         or to more than the CPU has (the message names the variable, the value and the
//         allowed ones).
CpuIsa cpu_isa();

// Why cpu_isa() is what it is, e.g. "cpu has avx512f", "EMBER_CPU_ISA=avx2; cpu has avx512f",
// "set_cpu_isa_cap(\"baseline\"); cpu has avx2, fma". Throws as cpu_isa().
std::string cpu_isa_reason();

// requires: isa is "", "avx512", "avx2" or "baseline", and no more than the CPU has.
// ensures:  cpu_isa() is min(detected, isa) until the next call; "" returns to EMBER_CPU_ISA.
// throws:   ValueError otherwise, naming the value and the allowed ones; the cap is unchanged.
void set_cpu_isa_cap(const std::string& isa);

}  // namespace ember::kernels::cpu

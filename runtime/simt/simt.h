// The SIMT emulator's host side: options (thread order, workers, fiber stacks), the device
// limits it enforces, and the entry point a launch goes through.
//
// Execution model (see docs/emulator.md): a launch runs to completion before run_launch
// returns. Blocks are handed out to `workers` OS threads, one block at a time per worker; each
// CUDA thread of a block is a fiber on a guarded, pooled stack. Between two block barriers a
// worker runs the runnable threads one after another in the chosen order, each until it reaches
// a barrier, a warp collective, or its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/simt/vector_types.h"

namespace ember::simt {

enum class Order { Forward, Reverse, Random };

// The limits of the emulated device (those of an H100-class GPU).
constexpr int kWarpSize = 32;
constexpr int kMaxThreadsPerBlock = 1024;
constexpr size_t kSharedPerBlock = 48 * 1024;
constexpr size_t kSharedPerBlockOptin = 227 * 1024;

struct Options {
  Order order = Order::Forward;
  uint64_t seed = 0;               // for Order::Random
  int workers = 1;                 // OS threads that run blocks
  size_t stack_bytes = 64 * 1024;  // per CUDA thread, plus one guard page
  // The emulated device's gridDim.y and gridDim.z limit: CUDA's 65535 unless lowered. Kernels
  // that loop past the limit read it from the device properties, so a test can lower it and
  // run those loops with a few blocks a launch.
  unsigned max_grid_yz = 65535;
  // The opt-in limit of dynamic shared memory per block (kSharedPerBlockOptin unless lowered,
  // say to a Turing GPU's 64 KiB, so a test sees the plans made for a smaller device).
  size_t shared_optin = kSharedPerBlockOptin;
};

// The options in force. On first use they come from the environment: EMBER_SIMT_ORDER
// (forward | reverse | random | random:SEED) and EMBER_SIMT_WORKERS (a positive integer).
Options options();
// requires: o.workers >= 1, o.stack_bytes >= 16 KiB, 1 <= o.max_grid_yz <= 65535,
// 48 KiB <= o.shared_optin <= kSharedPerBlockOptin (ValueError otherwise).
// ensures: the next launch uses `o`.
void set_options(const Options& o);
// Parses an EMBER_SIMT_ORDER value into `base`'s order and seed. Throws ValueError.
Options parse_order(const std::string& text, Options base);
std::string order_name(Order o);

// Everything run_launch needs; built by simt::launch (runtime/simt/launch.h).
struct LaunchSpec {
  const char* kernel = "";  // the kernel as written at the launch site
  const char* file = "";
  int line = 0;
  dim3 grid, block;
  size_t shared_bytes = 0;     // dynamic shared memory per block
  const void* func = nullptr;  // identifies the kernel (for the opt-in shared memory limit)
  void (*body)(const void* closure) = nullptr;  // runs the kernel for the current thread
  const void* closure = nullptr;
};

// Runs a whole launch. Throws CudaError (naming the CUDA error a GPU gives) for a launch
// configuration a GPU refuses, and CudaError with a report naming kernel, block, thread and
// file:line when a block deadlocks, reaches divergent barriers, calls a warp collective in
// divergent code, or a thread throws. The process stays usable after any of these.
void run_launch(const LaunchSpec& spec);

// Like cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes).
// Throws CudaError (cudaErrorInvalidValue) above the opt-in limit (Options::shared_optin). A
// launch may use the smaller of `bytes` and the opt-in limit in force when it runs.
void set_max_dynamic_shared(const void* func, size_t bytes);

}  // namespace ember::simt

// Work counters: the floating-point operations and the device-memory bytes that the kernels
// report through EMBER_COUNT_WORK (kernels/cuda/compat.h) while a WorkCount is alive, per kernel
// launch site. A correctness tool like the rest of the emulator: the tests hold the cost model's
// counts (ops/conv2d_algo.h, ConvAlgo::work) against what the kernels actually did.
//
// What a kernel reports is its own business (each file says what it counts); the convolution
// kernels report 2 per multiply-add of their products and the bytes each thread loads from and
// stores to global memory, loads skipped for padding or out-of-range tile elements not counted.
// Under nvcc EMBER_COUNT_WORK is empty, so the real kernels carry no trace of it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::simt {

// The work of the launches of one kernel launch site.
struct KernelWork {
  std::string kernel;  // as written at the launch site, with its file:line
  int64_t launches = 0;
  int64_t flops = 0;
  int64_t bytes = 0;
};

// Counts while alive: every launch's reported work is added to its launch site's entry.
// requires: no other WorkCount is alive (ValueError otherwise); not created inside a kernel.
class WorkCount {
 public:
  WorkCount();
  ~WorkCount();
  WorkCount(const WorkCount&) = delete;
  WorkCount& operator=(const WorkCount&) = delete;

  // The launch sites in the order of their first launch since this WorkCount began.
  std::vector<KernelWork> kernels() const;
  // All of them added up (kernel "total").
  KernelWork total() const;
};

namespace detail {

struct ThreadWork {
  int64_t flops = 0, bytes = 0;
};
extern std::atomic<bool> g_counting;
extern thread_local ThreadWork t_work;

// Called by the launch: the work the current OS thread's blocks reported, added to the launch
// site's entry (and t_work cleared).
void add_launch_work(const char* kernel, const char* file, int line, bool first_worker);

}  // namespace detail

// EMBER_COUNT_WORK's body: a relaxed load and a branch when nothing is counting.
inline void count_work(int64_t flops, int64_t bytes) {
  if (detail::g_counting.load(std::memory_order_relaxed)) {
    detail::t_work.flops += flops;
    detail::t_work.bytes += bytes;
  }
}

}  // namespace ember::simt

// Internal: the worker that runs one block of a launch at a time, each CUDA thread a fiber, and
// the checks that turn deadlocks, divergent barriers and divergent warp collectives into reports.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "runtime/simt/async_copy.h"
#include "runtime/simt/builtins.h"
#include "runtime/simt/fiber.h"
#include "runtime/simt/simt.h"

namespace ember::simt::detail {

enum class State : int { Runnable, AtBarrier, AtWarp, Exited };

// One CUDA thread. The fields above `result` are written by the thread itself (relaxed atomics,
// see Note [Races under TSan]) and read by the scheduler; `result` goes the other way.
struct Thread {
  Context ctx = nullptr;
  uint3 tid{};
  State state = State::Runnable;
  const char* file = nullptr;  // where it waits
  int line = 0;
  BarrierKind kind = BarrierKind::Plain;
  int pred = 0;
  WarpOp op = WarpOp::Sync;
  uint32_t mask = 0;
  int param = 0;
  int width = 32;
  uint64_t value = 0;
  uint64_t result = 0;
};

class Worker {
 public:
  // The calling OS thread's worker, created on first use and kept (with its stacks) until the
  // thread exits.
  static Worker& current();
  // The worker whose fiber is running on this OS thread, or nullptr outside kernels.
  static Worker* active();

  // Runs block `block` of `spec` to completion.
  // ensures: every thread of the block has returned, or CudaError was thrown with a report (the
  // block's fibers are then abandoned; the worker stays usable).
  void run_block(const LaunchSpec& spec, uint3 block, const Options& opts);

  // Called from the running CUDA thread.
  int barrier(BarrierKind kind, int pred, const char* file, int line);
  uint64_t warp(WarpOp op, uint32_t mask, uint64_t value, int param, int width, const char* file,
                int line);
  uint32_t active_mask() const;
  unsigned char* dynamic_shared() { return reinterpret_cast<unsigned char*>(shared_.data()); }
  size_t dynamic_shared_bytes() const { return spec_->shared_bytes; }

  // The largest record a lane deposits in a warp all-gather.
  static constexpr int kMaxGatherBytes = 64;
  // A warp collective of the whole warp (op Mma or Ldmatrix, which names it in reports): the
  // calling lane deposits `bytes` bytes from `mine` and waits for every lane of its warp.
  // requires: 0 < bytes <= kMaxGatherBytes, the same at every lane.
  // ensures: *table holds lane l's bytes at *table + l * bytes for each lane l of the warp, valid
  // until this lane's next warp collective; returns the mask of the warp's lanes (all 32
  // unless the block's last warp is partial).
  uint32_t all_gather(WarpOp op, const void* mine, int bytes, const unsigned char** table,
                      const char* file, int line);

  // The running CUDA thread: its index in the block (x fastest) and its name in reports.
  int current_thread() const { return cur_; }
  std::string thread_name(int i) const;
  AsyncCopies& async_copies() { return async_; }

 private:
  struct alignas(128) SharedChunk {
    unsigned char bytes[128];
  };
  static void fiber_main(Transfer t);
  void schedule();
  void resume(int i);
  void yield();
  void make_order();
  void on_warp_arrival(int i);
  void resolve_stall();
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void report_warp_stall(int i) const;
  void gather_records(int lo, int hi, int bytes);
  std::string wait_site(int i) const;

  const LaunchSpec* spec_ = nullptr;
  Options opts_;
  uint3 block_{};
  int n_ = 0;
  std::vector<Thread> threads_;
  std::vector<int> order_;
  StackPool stacks_;
  std::vector<SharedChunk> shared_;
  std::vector<unsigned char> gathered_;  // per warp: 32 lanes' all-gather records
  AsyncCopies async_;
  bool dirty_stacks_ = false;  // a failed block left fibers mid-run on them
  int cur_ = -1;
  int exited_ = 0;
  int first_exited_ = -1;
  int barrier_result_ = 0;
  uint64_t phase_ = 0;
  Context sched_ = nullptr;
  SwitchNotes notes_;
  std::exception_ptr thrown_;
  char hb_barrier_ = 0, hb_done_ = 0;  // TSan sync objects
  char hb_warp_[kMaxThreadsPerBlock / kWarpSize] = {};
};

}  // namespace ember::simt::detail

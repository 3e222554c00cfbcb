// The op trace: a record of every kernel call and library call as it runs, for learners who want
// to watch the dispatcher at work and for finding where time goes.
//
// Note [Op trace]
// With tracing on (EMBER_TRACE=1: lines on stderr; EMBER_TRACE=path.json: a Chrome trace file;
// or trace::start from code, ember.trace() in Python), kernels_for() hands out tables whose
// entries record each call of a compute kernel: its name (which says the algorithm:
// conv2d_fwd_winograd, gemm_tc_batched, ...), the device and backend (cpu, cuda, emu), the dtype
// and sizes it was given, and its time. Library calls (cuDNN, cuBLAS) record themselves the same
// way. A GPU kernel's time is measured by waiting for its stream after the call, so tracing
// serialises the GPU (and slows it); without tracing nothing is recorded and nothing waits.
// Events carry the thread and a start time, so the Chrome trace shows them on a time line
// (chrome://tracing or https://ui.perfetto.dev open the file).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "runtime/device.h"

namespace ember::trace {

namespace detail {
extern std::atomic<bool> g_enabled;
}

// Whether calls are being recorded (EMBER_TRACE is read once, at the first query).
bool enabled();
// Starts recording to `target`: "1", "" or "stderr" for lines on stderr, a path ending in .json
// for a Chrome trace file (written by stop(), or at exit). Replaces an active trace (which is
// stopped first). Throws ValueError for any other target, IOError when the file cannot be opened.
void start(const std::string& target);
// Starts recording into `sink`, called once per recorded call (under the trace's lock: it must
// not call back into trace::). For tools that attribute calls to their own units, as
// `ember run --profile` does with ONNX nodes. Replaces an active trace.
using Sink = std::function<void(const char* category, const std::string& name, Device device,
                                const std::string& detail, double ms)>;
void start(Sink sink);
// Stops recording; writes and closes the Chrome trace file, if any. Returns the number of events
// recorded since start().
size_t stop();

// One recorded call. `category` is "kernel" or "library"; `detail` the call's arguments as text.
void record(const char* category, const std::string& name, Device device,
            const std::string& detail, std::chrono::steady_clock::time_point begin,
            std::chrono::steady_clock::time_point end);

// Records the scope's lifetime as one call of `name` on `device` (for library calls).
class Scope {
 public:
  Scope(const char* category, std::string name, Device device, std::string detail = {});
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool active_;
  const char* category_;
  std::string name_, detail_;
  Device device_;
  std::chrono::steady_clock::time_point begin_;
};

}  // namespace ember::trace

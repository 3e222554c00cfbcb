// The watchdog of a process group: a thread that publishes this rank's heartbeat and progress to
// the TCP store, and the diagnosis a timed-out collective reads from it.
//
// Note [Timeouts and the watchdog]: a collective that does not finish never hangs the job.
// Waiting is polling with a deadline (the group's timeout after the collective was issued): MPI's
// non-blocking collectives are tested (MPI_Test) in a loop with a growing sleep, NCCL's
// completion events are queried. When the deadline passes, the waiting rank asks the store what
// the others were doing. Every rank's watchdog thread writes `hb/<rank>` = "<collectives issued>"
// every interval (a tenth of the timeout, at most 1 s), and the store remembers, by its own clock,
// when each key was last written. A rank whose heartbeat is older than three intervals has
// stopped answering (killed, crashed, stopped in a debugger): the heartbeat comes from a thread
// of its own, so a rank busy computing still beats. A rank that beats but has issued fewer
// collectives is behind, or runs its collectives in another order. The error names them:
//   all_reduce #37 (6.2 MiB float32) timed out after 10 s on rank 0 of 2: rank 1 stopped
//   answering (no heartbeat for 9.4 s: killed, crashed or stopped?) after 36 collectives
// A group that timed out is broken: later collectives fail at once, and it is never finalised
// (MPI_Finalize would wait for the missing rank). Under mpirun, a rank that dies is also seen by
// mpirun itself, which ends the job and names the rank; the watchdog is what names a rank that
// hangs, and a dead one under launchers that let the others run on (`mpirun --enable-recovery`,
// env:// launchers).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "dist/store.h"

namespace ember::dist {

class Watchdog {
 public:
  // Connects to the store at host:port (twice: one connection for the thread, one for
  // diagnose()) and starts beating. requires: the store is up.
  Watchdog(const std::string& host, int port, int rank, int size,
           std::chrono::milliseconds timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Records that this rank has issued `count` collectives (published with the next beat).
  void issued(uint64_t count) { issued_.store(count, std::memory_order_relaxed); }
  // For the error of collective number `seq` (1-based) that timed out on this rank: which ranks
  // stopped answering or are behind, as one clause ("rank 1 stopped answering (...)").
  std::string diagnose(uint64_t seq);
  std::chrono::milliseconds interval() const { return interval_; }

 private:
  void beat_loop();
  int rank_, size_;
  std::chrono::milliseconds interval_;
  std::unique_ptr<TcpStore> beat_store_, query_store_;
  std::atomic<uint64_t> issued_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ember::dist

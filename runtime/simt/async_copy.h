// Internal: the cp.async copies of the block a worker runs, from issue to wait.
//
// Note [Pending cp.async]: on a GPU a cp.async lands in shared memory at some time before the
// cp.async.wait_group that covers it returns; reading the destination earlier reads whatever is
// there. The emulator makes that visible: the issuing thread reads the source at once (the
// value the copy will write), fills the destination with 0xFF bytes (NaN as float, half and
// bfloat16, as dynamic shared memory is poisoned), and writes the value only when the same
// thread waits for the copy's group. Groups are per thread, as in PTX: commit closes the
// thread's open group (an empty one too); wait(n) completes every group but the newest n
// committed ones; copies not yet committed stay pending. The pending destinations are kept in
// an ordered map, so ldmatrix can refuse to read one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

namespace ember::simt::detail {

class AsyncCopies {
 public:
  // The largest copy (cp.async.cg moves 16 bytes).
  static constexpr int kMaxBytes = 16;
  // Who issued a pending copy, for reports.
  struct Issuer {
    int thread = -1;
    const char* file = "";
    int line = 0;
  };

  // A new block of `threads` threads: nothing pending.
  void reset(int threads);
  // Records a copy of `bytes` bytes to `dst`: the first `src_bytes` read from `src` now, the
  // rest zeros; poisons dst.
  // requires: 0 <= src_bytes <= bytes <= kMaxBytes; the caller checked both addresses.
  void issue(int thread, unsigned char* dst, const unsigned char* src, int bytes, int src_bytes,
             const char* file, int line);
  void commit(int thread);
  // Writes the copies of every committed group of `thread` but the newest `n`.
  void wait(int thread, int n);
  // ensures: true and *who set when a pending copy writes into [p, p + bytes).
  bool pending_over(const void* p, size_t bytes, Issuer* who) const;

 private:
  struct Copy {
    unsigned char* dst;
    unsigned char data[kMaxBytes];
    int bytes;
    uint64_t group;  // the thread's committed-group count when it was issued
    const char* file;
    int line;
  };
  struct PerThread {
    std::deque<Copy> copies;  // in issue order, so groups never decrease
    uint64_t committed = 0;
  };
  void erase_pending(const Copy& c, int thread);

  int threads_ = 0;
  std::vector<PerThread> per_thread_;  // allocated by the block's first cp.async
  std::multimap<uintptr_t, Issuer> pending_;
};

}  // namespace ember::simt::detail

// The cp.async copies of one block (Note [Pending cp.async] in async_copy.h).
#include "runtime/simt/async_copy.h"

#include <cstring>

#include "runtime/simt/fiber.h"

namespace ember::simt::detail {

void AsyncCopies::reset(int threads) {
  threads_ = threads;
  if (!per_thread_.empty()) per_thread_.clear();
  pending_.clear();
}

// The kernel's own accesses (the source read, the poison) are outside the TSan ignore region,
// so they are checked as the issuing thread's; the bookkeeping is not.
void AsyncCopies::issue(int thread, unsigned char* dst, const unsigned char* src, int bytes,
                        int src_bytes, const char* file, int line) {
  Copy c{};
  c.dst = dst;
  c.bytes = bytes;
  c.file = file;
  c.line = line;
  std::memcpy(c.data, src, static_cast<size_t>(src_bytes));
  std::memset(dst, 0xff, static_cast<size_t>(bytes));
  TsanIgnore ignore;
  if (per_thread_.empty()) per_thread_.resize(static_cast<size_t>(threads_));
  PerThread& t = per_thread_[thread];
  c.group = t.committed;
  t.copies.push_back(c);
  pending_.emplace(reinterpret_cast<uintptr_t>(dst), Issuer{thread, file, line});
}

void AsyncCopies::commit(int thread) {
  TsanIgnore ignore;
  if (per_thread_.empty()) per_thread_.resize(static_cast<size_t>(threads_));
  ++per_thread_[thread].committed;
}

void AsyncCopies::wait(int thread, int n) {
  for (;;) {
    Copy c;
    {
      TsanIgnore ignore;
      if (per_thread_.empty()) return;
      PerThread& t = per_thread_[thread];
      const uint64_t keep = static_cast<uint64_t>(n);
      if (t.copies.empty() || t.copies.front().group + keep >= t.committed) return;
      c = t.copies.front();
      t.copies.pop_front();
      erase_pending(c, thread);
    }
    std::memcpy(c.dst, c.data, static_cast<size_t>(c.bytes));
  }
}

void AsyncCopies::erase_pending(const Copy& c, int thread) {
  auto range = pending_.equal_range(reinterpret_cast<uintptr_t>(c.dst));
  for (auto it = range.first; it != range.second; ++it)
    if (it->second.thread == thread) {
      pending_.erase(it);
      return;
    }
}

bool AsyncCopies::pending_over(const void* p, size_t bytes, Issuer* who) const {
  TsanIgnore ignore;
  if (pending_.empty()) return false;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  // A copy starting at k writes [k, k + kMaxBytes) at most: it overlaps when k > lo - kMaxBytes.
  const auto it = pending_.lower_bound(lo >= kMaxBytes ? lo - kMaxBytes + 1 : 0);
  if (it == pending_.end() || it->first >= lo + bytes) return false;
  *who = it->second;
  return true;
}

}  // namespace ember::simt::detail

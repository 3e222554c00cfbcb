// Fibers for the SIMT emulator: guarded stacks and context switches on Boost.Context's fcontext,
// with the fiber-switch annotations AddressSanitizer and ThreadSanitizer need.
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <cstddef>
#include <vector>

namespace ember::simt::detail {

namespace bctx = boost::context::detail;

// An mmap'd stack with a PROT_NONE guard page below it: an overflow faults instead of silently
// corrupting the neighbouring fiber.
struct Stack {
  void* base = nullptr;  // start of the usable region (just above the guard page)
  size_t size = 0;       // usable bytes
  void* tsan_fiber = nullptr;
  void* top() const { return static_cast<char*>(base) + size; }
};

// Per-worker pool: stacks are created on first need and reused for every later block.
class StackPool {
 public:
  ~StackPool();
  // ensures: at least n stacks of `bytes` usable bytes each; stacks of another size are freed.
  void reserve(size_t n, size_t bytes);
  Stack& operator[](size_t i) { return stacks_[i]; }

 private:
  void release_all();
  std::vector<Stack> stacks_;
  size_t bytes_ = 0;
};

// The sanitizers' view of one switch. `to` is the stack being entered (nullptr for a worker's
// own stack, whose bounds are learnt on the first switch away from it).
struct SwitchNotes {
  const void* main_bottom = nullptr;  // the worker's own stack, as ASan reports it
  size_t main_size = 0;
  void* main_tsan_fiber = nullptr;
};

// Called around every jump_fcontext. `dying` marks the last switch away from a finished fiber;
// `sync` makes the switch a happens-before edge for TSan (only switches into a fiber are).
void before_switch(void** fake_stack, const void* to_bottom, size_t to_size, void* to_tsan,
                   bool dying, bool sync);
void after_switch(void* fake_stack, SwitchNotes* learn_main);
// Makes a stack reusable after its fiber was abandoned mid-run (clears ASan poisoning).
void recycle_stack(Stack& s);
void* current_tsan_fiber();
// The emulator's own bookkeeping is invisible to TSan between these calls (per fiber), so only
// kernel code's accesses are checked (Note [Races under TSan] in block.cpp).
void tsan_ignore_begin();
void tsan_ignore_end();
class TsanIgnore {
 public:
  TsanIgnore() { tsan_ignore_begin(); }
  ~TsanIgnore() { tsan_ignore_end(); }
  TsanIgnore(const TsanIgnore&) = delete;
  TsanIgnore& operator=(const TsanIgnore&) = delete;
};
// Happens-before edges for TSan through a sync object (no-ops in other builds).
void hb_release(void* addr);
void hb_acquire(void* addr);

}  // namespace ember::simt::detail

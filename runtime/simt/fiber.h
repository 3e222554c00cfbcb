// Fibers for the SIMT emulator: guarded stacks and context switches, with the fiber-switch
// annotations AddressSanitizer and ThreadSanitizer need. The switches use Boost.Context's fcontext
// or, in builds without Boost (EMBER_SIMT_UCONTEXT, chosen by CMake's EMBER_SIMT_FIBERS), POSIX
// ucontext behind the same interface; ucontext is several times slower (swapcontext makes a
// signal-mask system call on every switch) but needs nothing beyond libc.
#pragma once

#include <cstddef>
#include <vector>

#if !EMBER_SIMT_UCONTEXT
#include <boost/context/detail/fcontext.hpp>
#endif

namespace ember::simt::detail {

// A suspended execution context, valid until it is jumped to once (fcontext's rules).
#if EMBER_SIMT_UCONTEXT
using Context = void*;
// What a jump delivers to the context it enters: the context it came from and a pointer.
struct Transfer {
  Context fctx;
  void* data;
};
#else
using Context = boost::context::detail::fcontext_t;
using Transfer = boost::context::detail::transfer_t;
#endif

// requires: [stack_top - size, stack_top) is a usable stack; fn never returns (it leaves by
// jumping away). ensures: the first jump to the result calls fn on that stack.
Context make_context(void* stack_top, size_t size, void (*fn)(Transfer));
// Suspends the calling context and resumes `to`, handing it `data`; returns, when something jumps
// back here, the context that did and the pointer it passed.
Transfer jump_context(Context to, void* data);

#if !EMBER_SIMT_UCONTEXT
inline Context make_context(void* stack_top, size_t size, void (*fn)(Transfer)) {
  return boost::context::detail::make_fcontext(stack_top, size, fn);
}
inline Transfer jump_context(Context to, void* data) {
  return boost::context::detail::jump_fcontext(to, data);
}
#endif

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

// Called around every jump_context. `dying` marks the last switch away from a finished fiber;
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

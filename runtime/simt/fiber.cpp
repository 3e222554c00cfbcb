#include "runtime/simt/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#if EMBER_SIMT_UCONTEXT
#include <ucontext.h>

#include <cstdint>
#include <new>
#endif

#include "runtime/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMBER_SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_SIMT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define EMBER_SIMT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMBER_SIMT_TSAN 1
#endif
#endif

#ifdef EMBER_SIMT_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef EMBER_SIMT_TSAN
#include <sanitizer/tsan_interface.h>
// TSan's dynamic-annotation entry points (exported by the TSan runtime).
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif

namespace ember::simt::detail {

namespace {
size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}
}  // namespace

StackPool::~StackPool() {
  release_all();
}

void StackPool::release_all() {
  for (Stack& s : stacks_) {
#ifdef EMBER_SIMT_TSAN
    if (s.tsan_fiber) __tsan_destroy_fiber(s.tsan_fiber);
#endif
    recycle_stack(s);  // Note [Stale stack shadow]
    munmap(static_cast<char*>(s.base) - page_size(), s.size + page_size());
  }
  stacks_.clear();
}

// Note [Stale stack shadow]: a fiber abandoned mid-run (a kernel thread threw, or a block ended in
// a reported deadlock) leaves its frames' ASan redzones poisoned on its stack, and GCC's ASan
// poisons only the redzones of a new frame, trusting the rest of the shadow to be clear. Stacks
// kept in the pool are cleared before reuse (Worker::run_block); a stack mapped where an
// unmapped one used to be could inherit that shadow, as the sanitizer need not clear it on
// munmap. So every stack's shadow is cleared when it is mapped and again before it is unmapped.
void StackPool::reserve(size_t n, size_t bytes) {
  bytes = (bytes + page_size() - 1) / page_size() * page_size();
  if (bytes != bytes_) {
    release_all();
    bytes_ = bytes;
  }
  while (stacks_.size() < n) {
    const size_t total = bytes + page_size();
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
      EMBER_THROW(CudaError, "SIMT emulator: cannot map a ", bytes, "-byte fiber stack (",
                  stacks_.size(), " mapped so far)");
    mprotect(p, page_size(), PROT_NONE);  // the guard page
    Stack s;
    s.base = static_cast<char*>(p) + page_size();
    s.size = bytes;
    recycle_stack(s);  // Note [Stale stack shadow]
#ifdef EMBER_SIMT_TSAN
    s.tsan_fiber = __tsan_create_fiber(0);
#endif
    stacks_.push_back(s);
  }
}

#if EMBER_SIMT_UCONTEXT
// Note [ucontext fibers]: fcontext's interface on top of makecontext/swapcontext. A context is a
// Uctx record: a fiber's sits at the top of its own stack (as fcontext keeps its state there), the
// OS thread's own context is a thread_local one. A jump saves the running context into its record
// (tls_running says which) and leaves the Transfer in the record being entered, which its jump
// (or, for a new fiber, the trampoline) returns. Records are reused across jumps, which fcontext's
// one-shot handles allow.
namespace {
struct Uctx {
  ucontext_t uc;
  void (*fn)(Transfer) = nullptr;
  Transfer incoming{nullptr, nullptr};
};
thread_local Uctx tls_thread_ctx;
thread_local Uctx* tls_running = nullptr;

Uctx* running() {
  return tls_running ? tls_running : &tls_thread_ctx;
}

void trampoline() {
  Uctx* self = running();
  self->fn(self->incoming);
  __builtin_unreachable();  // fn leaves by jumping away
}
}  // namespace

Context make_context(void* stack_top, size_t size, void (*fn)(Transfer)) {
  const uintptr_t top = reinterpret_cast<uintptr_t>(stack_top);
  const uintptr_t rec = (top - sizeof(Uctx)) & ~uintptr_t{63};
  EMBER_CHECK(top - size + 4096 < rec, "SIMT emulator: a ", size, "-byte fiber stack is too small");
  Uctx* c = new (reinterpret_cast<void*>(rec)) Uctx;
  if (getcontext(&c->uc) != 0) EMBER_THROW(CudaError, "SIMT emulator: getcontext failed");
  c->uc.uc_stack.ss_sp = reinterpret_cast<void*>(top - size);
  c->uc.uc_stack.ss_size = rec - (top - size);
  c->uc.uc_link = nullptr;
  c->fn = fn;
  makecontext(&c->uc, &trampoline, 0);
  return c;
}

Transfer jump_context(Context to, void* data) {
  Uctx* from = running();
  Uctx* target = static_cast<Uctx*>(to);
  target->incoming = Transfer{from, data};
  tls_running = target;
  swapcontext(&from->uc, &target->uc);
  return from->incoming;  // set by whoever jumped back here
}
#endif

void before_switch(void** fake_stack, const void* to_bottom, size_t to_size, void* to_tsan,
                   bool dying, bool sync) {
#ifdef EMBER_SIMT_ASAN
  __sanitizer_start_switch_fiber(dying ? nullptr : fake_stack, to_bottom, to_size);
#else
  (void)fake_stack, (void)to_bottom, (void)to_size, (void)dying;
#endif
#ifdef EMBER_SIMT_TSAN
  // Switches back to the scheduler carry no happens-before: barriers and warp collectives add
  // their own (Note [Races under TSan] in block.cpp), so races between CUDA threads stay visible.
  __tsan_switch_to_fiber(to_tsan, sync ? 0u : unsigned(__tsan_switch_to_fiber_no_sync));
#else
  (void)to_tsan, (void)sync;
#endif
}

void after_switch(void* fake_stack, SwitchNotes* learn_main) {
#ifdef EMBER_SIMT_ASAN
  if (learn_main)
    __sanitizer_finish_switch_fiber(fake_stack, &learn_main->main_bottom, &learn_main->main_size);
  else
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
  (void)fake_stack, (void)learn_main;
#endif
}

void recycle_stack(Stack& s) {
#ifdef EMBER_SIMT_ASAN
  __asan_unpoison_memory_region(s.base, s.size);
#else
  (void)s;
#endif
}

void* current_tsan_fiber() {
#ifdef EMBER_SIMT_TSAN
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

void tsan_ignore_begin() {
#ifdef EMBER_SIMT_TSAN
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
}

void tsan_ignore_end() {
#ifdef EMBER_SIMT_TSAN
  AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
}

void hb_release(void* addr) {
#ifdef EMBER_SIMT_TSAN
  __tsan_release(addr);
#else
  (void)addr;
#endif
}

void hb_acquire(void* addr) {
#ifdef EMBER_SIMT_TSAN
  __tsan_acquire(addr);
#else
  (void)addr;
#endif
}

}  // namespace ember::simt::detail

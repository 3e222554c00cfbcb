#include "runtime/simt/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

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

StackPool::~StackPool() { release_all(); }

void StackPool::release_all() {
  for (Stack& s : stacks_) {
#ifdef EMBER_SIMT_TSAN
    if (s.tsan_fiber) __tsan_destroy_fiber(s.tsan_fiber);
#endif
    munmap(static_cast<char*>(s.base) - page_size(), s.size + page_size());
  }
  stacks_.clear();
}

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
#ifdef EMBER_SIMT_TSAN
    s.tsan_fiber = __tsan_create_fiber(0);
#endif
    stacks_.push_back(s);
  }
}

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

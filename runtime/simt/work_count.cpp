// The emulator's work counters (runtime/simt/work_count.h).
#include "runtime/simt/work_count.h"

#include <mutex>

#include "runtime/error.h"

namespace ember::simt {

namespace detail {
std::atomic<bool> g_counting{false};
thread_local ThreadWork t_work;
}  // namespace detail

namespace {

std::mutex g_mutex;
std::vector<KernelWork> g_kernels;  // guarded by g_mutex

}  // namespace

namespace detail {

void add_launch_work(const char* kernel, const char* file, int line, bool first_worker) {
  const ThreadWork w = t_work;
  t_work = ThreadWork{};
  if (!g_counting.load(std::memory_order_relaxed)) return;
  const std::string name = ember::detail::str_cat(kernel, " (", file, ":", line, ")");
  std::lock_guard<std::mutex> lock(g_mutex);
  KernelWork* entry = nullptr;
  for (KernelWork& k : g_kernels)
    if (k.kernel == name) entry = &k;
  if (entry == nullptr) {
    g_kernels.push_back(KernelWork{name, 0, 0, 0});
    entry = &g_kernels.back();
  }
  if (first_worker) ++entry->launches;
  entry->flops += w.flops;
  entry->bytes += w.bytes;
}

}  // namespace detail

WorkCount::WorkCount() {
  std::lock_guard<std::mutex> lock(g_mutex);
  EMBER_CHECK_VALUE(!detail::g_counting.load(), "simt::WorkCount: another one is counting");
  g_kernels.clear();
  detail::t_work = detail::ThreadWork{};
  detail::g_counting.store(true);
}

WorkCount::~WorkCount() {
  std::lock_guard<std::mutex> lock(g_mutex);
  detail::g_counting.store(false);
  g_kernels.clear();
}

std::vector<KernelWork> WorkCount::kernels() const {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_kernels;
}

KernelWork WorkCount::total() const {
  KernelWork t{"total", 0, 0, 0};
  for (const KernelWork& k : kernels()) {
    t.launches += k.launches;
    t.flops += k.flops;
    t.bytes += k.bytes;
  }
  return t;
}

}  // namespace ember::simt

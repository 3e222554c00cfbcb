// A launch on the SIMT emulator: options, the checks a GPU makes before it starts a kernel, and
// the hand-out of blocks to workers.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "runtime/error.h"
#include "runtime/simt/block.h"
#include "runtime/simt/simt.h"
#include "runtime/simt/work_count.h"

namespace ember::simt {

namespace {

std::mutex g_mutex;
bool g_init = false;
Options g_options;
std::map<const void*, size_t> g_max_shared;  // opt-in dynamic shared memory per kernel

Options from_env() {
  Options o;
  if (const char* s = std::getenv("EMBER_SIMT_ORDER"); s && *s) o = parse_order(s, o);
  if (const char* s = std::getenv("EMBER_SIMT_WORKERS"); s && *s) {
    char* end = nullptr;
    long n = std::strtol(s, &end, 10);
    EMBER_CHECK_VALUE(*end == '\0' && n >= 1 && n <= 1024,
                      "EMBER_SIMT_WORKERS: expected a positive integer, got '", s, "'");
    o.workers = static_cast<int>(n);
  }
  return o;
}

std::string dims(dim3 d) { return ember::detail::str_cat("(", d.x, ",", d.y, ",", d.z, ")"); }

[[noreturn]] void refuse(const LaunchSpec& s, const char* err, const char* text,
                         const std::string& why) {
  EMBER_THROW(CudaError, "CUDA error ", err, " (", text, ") launching ", s.kernel, "<<<",
              dims(s.grid), ", ", dims(s.block), ", ", s.shared_bytes, ">>> at ", s.file, ":",
              s.line, " on emu: ", why);
}

// The checks cudaLaunchKernel makes, with the errors it returns.
void check_config(const LaunchSpec& s) {
  const char* kConfig = "cudaErrorInvalidConfiguration";
  const char* kConfigText = "invalid configuration argument";
  const dim3 b = s.block, g = s.grid;
  if (!b.x || !b.y || !b.z) refuse(s, kConfig, kConfigText, "a block dimension is zero");
  if (!g.x || !g.y || !g.z) refuse(s, kConfig, kConfigText, "a grid dimension is zero");
  const uint64_t threads = uint64_t(b.x) * b.y * b.z;
  if (threads > uint64_t(kMaxThreadsPerBlock))
    refuse(s, kConfig, kConfigText,
           ember::detail::str_cat("the block has ", threads, " threads; the limit is ",
                                  kMaxThreadsPerBlock));
  if (b.x > 1024 || b.y > 1024 || b.z > 64)
    refuse(s, kConfig, kConfigText, "block dimensions are limited to (1024,1024,64)");
  const Options o = options();
  const unsigned yz = o.max_grid_yz;
  if (g.x > 2147483647u || g.y > yz || g.z > yz)
    refuse(s, kConfig, kConfigText,
           ember::detail::str_cat("grid dimensions are limited to (2^31-1,", yz, ",", yz, ")"));
  size_t limit = kSharedPerBlock;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_max_shared.find(s.func);
    if (it != g_max_shared.end()) limit = std::min(it->second, o.shared_optin);
  }
  if (s.shared_bytes > limit)
    refuse(
        s, "cudaErrorInvalidValue", "invalid argument",
        ember::detail::str_cat(s.shared_bytes,
                               " bytes of dynamic shared memory requested; the limit "
                               "for this kernel is ",
                               limit,
                               limit == kSharedPerBlock
                                   ? ember::detail::str_cat(" (raise it with "
                                                            "EMBER_SET_MAX_DYNAMIC_SHARED, up to ",
                                                            o.shared_optin, ")")
                                   : std::string()));
}

uint3 block_at(const dim3& g, uint64_t b) {
  return uint3{static_cast<unsigned>(b % g.x), static_cast<unsigned>((b / g.x) % g.y),
               static_cast<unsigned>(b / (uint64_t(g.x) * g.y))};
}

}  // namespace

Options options() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_init) {
    g_options = from_env();
    g_init = true;
  }
  return g_options;
}

void set_options(const Options& o) {
  EMBER_CHECK_VALUE(o.workers >= 1, "simt::set_options: workers must be >= 1, got ", o.workers);
  EMBER_CHECK_VALUE(o.stack_bytes >= 16 * 1024,
                    "simt::set_options: stack_bytes must be >= 16 KiB, got ", o.stack_bytes);
  EMBER_CHECK_VALUE(o.max_grid_yz >= 1 && o.max_grid_yz <= 65535,
                    "simt::set_options: max_grid_yz must be in [1, 65535], got ", o.max_grid_yz);
  EMBER_CHECK_VALUE(o.shared_optin >= kSharedPerBlock && o.shared_optin <= kSharedPerBlockOptin,
                    "simt::set_options: shared_optin must be in [", kSharedPerBlock, ", ",
                    kSharedPerBlockOptin, "], got ", o.shared_optin);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_options = o;
  g_init = true;
}

Options parse_order(const std::string& text, Options base) {
  if (text == "forward") {
    base.order = Order::Forward;
  } else if (text == "reverse") {
    base.order = Order::Reverse;
  } else if (text.rfind("random", 0) == 0) {
    base.order = Order::Random;
    if (text.size() > 6) {
      EMBER_CHECK_VALUE(text[6] == ':' && text.size() > 7,
                        "EMBER_SIMT_ORDER: expected random:SEED, got '", text, "'");
      char* end = nullptr;
      const unsigned long long seed = std::strtoull(text.c_str() + 7, &end, 10);
      EMBER_CHECK_VALUE(*end == '\0', "EMBER_SIMT_ORDER: bad seed in '", text, "'");
      base.seed = seed;
    }
  } else {
    EMBER_THROW(ValueError,
                "EMBER_SIMT_ORDER: expected forward, reverse, random or random:SEED, "
                "got '",
                text, "'");
  }
  return base;
}

std::string order_name(Order o) {
  switch (o) {
    case Order::Forward: return "forward";
    case Order::Reverse: return "reverse";
    case Order::Random: return "random";
  }
  return "?";
}

void set_max_dynamic_shared(const void* func, size_t bytes) {
  const size_t optin = options().shared_optin;
  if (bytes > optin)
    EMBER_THROW(CudaError, "CUDA error cudaErrorInvalidValue (invalid argument): ", bytes,
                " bytes of dynamic shared memory exceed the device's opt-in limit of ", optin,
                " on emu");
  std::lock_guard<std::mutex> lock(g_mutex);
  g_max_shared[func] = bytes;
}

void run_launch(const LaunchSpec& spec) {
  if (detail::Worker::active())
    EMBER_THROW(CudaError, "SIMT emulator: ", spec.kernel, " launched from inside a kernel at ",
                spec.file, ":", spec.line, "; dynamic parallelism is not emulated");
  check_config(spec);
  const Options opts = options();
  const uint64_t blocks = uint64_t(spec.grid.x) * spec.grid.y * spec.grid.z;
  const int workers = static_cast<int>(std::min<uint64_t>(uint64_t(opts.workers), blocks));
  const bool counting = detail::g_counting.load(std::memory_order_relaxed);
  auto count_from = [&](bool first_worker) {
    if (counting) detail::add_launch_work(spec.kernel, spec.file, spec.line, first_worker);
  };
  if (workers <= 1) {
    detail::t_work = detail::ThreadWork{};
    detail::Worker& w = detail::Worker::current();
    for (uint64_t b = 0; b < blocks; ++b) w.run_block(spec, block_at(spec.grid, b), opts);
    count_from(true);
    return;
  }
  // The calling thread is worker 0; the others are started for this launch. Blocks are handed out
  // in increasing order and a worker stops only between blocks, so every block before the
  // lowest-numbered failing one has run: reporting that block makes the report the same as with
  // one worker.
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex err_mutex;
  std::exception_ptr err;
  uint64_t err_block = blocks;
  auto work = [&](bool first_worker) {
    detail::t_work = detail::ThreadWork{};
    detail::Worker& w = detail::Worker::current();
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t b = next.fetch_add(1);
      if (b >= blocks) break;
      try {
        w.run_block(spec, block_at(spec.grid, b), opts);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_mutex);
        if (b < err_block) err = std::current_exception(), err_block = b;
        stop = true;
      }
    }
    count_from(first_worker);
  };
  std::vector<std::thread> threads;
  for (int k = 1; k < workers; ++k) threads.emplace_back(work, false);
  work(true);
  for (std::thread& t : threads) t.join();
  if (err) std::rethrow_exception(err);
}

}  // namespace ember::simt

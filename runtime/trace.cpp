// The op trace (Note [Op trace] in runtime/trace.h): lines on stderr, or a Chrome trace file
// written event by event.
#include "runtime/trace.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <thread>

#include "runtime/error.h"
#include "runtime/gpu.h"

namespace ember::trace {

namespace detail {
std::atomic<bool> g_enabled{false};
}

namespace {

using Clock = std::chrono::steady_clock;

struct State {
  std::mutex mu;
  std::ofstream json;  // open while tracing to a file
  std::string path;
  Sink sink;  // set while tracing into a callback
  size_t events = 0;
  Clock::time_point origin = Clock::now();
};

State& state() {
  static State* s = new State();  // never destroyed: events may come from other threads at exit
  return *s;
}

// JSON string contents: quotes, backslashes and control characters escaped.
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void start_locked(State& st, const std::string& target) {
  st.sink = nullptr;
  if (target.empty() || target == "1" || target == "stderr") {
    st.path.clear();
  } else {
    EMBER_CHECK_VALUE(ends_with(target, ".json"), "trace: expected \"1\", \"stderr\" or a path ",
                      "ending in .json for a Chrome trace file, got \"", target, "\"");
    st.json.open(target, std::ios::out | std::ios::trunc);
    if (!st.json) EMBER_THROW(IOError, "trace: cannot open \"", target, "\" for writing");
    st.json << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    st.path = target;
  }
  st.events = 0;
  st.origin = Clock::now();
  detail::g_enabled.store(true, std::memory_order_release);
}

size_t stop_locked(State& st) {
  detail::g_enabled.store(false, std::memory_order_release);
  if (st.json.is_open()) {
    st.json << "\n]}\n";
    st.json.close();
  }
  st.path.clear();
  st.sink = nullptr;
  const size_t n = st.events;
  st.events = 0;
  return n;
}

// EMBER_TRACE, once, at the first query; a file trace is completed at exit.
bool read_environment() {
  const char* env = std::getenv("EMBER_TRACE");
  if (env == nullptr || std::string(env).empty() || std::string(env) == "0") return true;
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  try {
    start_locked(st, env);
  } catch (const Error& e) {
    std::fprintf(stderr, "ember: EMBER_TRACE ignored: %s\n", e.what());
    return true;
  }
  std::atexit([] {
    State& s = state();
    std::lock_guard<std::mutex> l(s.mu);
    stop_locked(s);
  });
  return true;
}

}  // namespace

bool enabled() {
  static const bool initialised = read_environment();
  (void)initialised;
  return detail::g_enabled.load(std::memory_order_acquire);
}

void start(const std::string& target) {
  enabled();  // EMBER_TRACE first, so that it cannot replace this trace later
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  stop_locked(st);
  start_locked(st, target);
}

void start(Sink sink) {
  enabled();
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  stop_locked(st);
  start_locked(st, "1");
  st.sink = std::move(sink);
}

size_t stop() {
  enabled();
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  return stop_locked(st);
}

void record(const char* category, const std::string& name, Device device,
            const std::string& detail, Clock::time_point begin, Clock::time_point end) {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  if (!detail::g_enabled.load(std::memory_order_relaxed)) return;
  const double us = std::chrono::duration<double, std::micro>(end - begin).count();
  if (st.sink) {
    st.sink(category, name, device, detail, us / 1000.0);
  } else if (!st.json.is_open()) {
    std::fprintf(stderr, "[ember trace] %-7s %-8s %-34s %s  %.3f ms\n", device.str().c_str(),
                 category, name.c_str(), detail.c_str(), us / 1000.0);
  } else {
    const double ts = std::chrono::duration<double, std::micro>(begin - st.origin).count();
    st.json << (st.events ? ",\n" : "") << "{\"name\": \"" << escaped(name) << "\", \"cat\": \""
            << category << "\", \"ph\": \"X\", \"ts\": " << std::fixed << std::setprecision(3)
            << ts << ", \"dur\": " << us << ", \"pid\": 0, \"tid\": "
            << std::hash<std::thread::id>()(std::this_thread::get_id()) % 100000
            << ", \"args\": {\"device\": \"" << device.str() << "\", \"args\": \""
            << escaped(detail) << "\"}}";
  }
  ++st.events;
}

Scope::Scope(const char* category, std::string name, Device device, std::string detail)
    : active_(enabled()),
      category_(category),
      name_(std::move(name)),
      detail_(std::move(detail)),
      device_(device),
      begin_(active_ ? Clock::now() : Clock::time_point{}) {}

Scope::~Scope() {
  if (!active_) return;
  try {
    if (device_.is_gpu_like())
      gpu::backend(device_).stream_synchronize(gpu::current_stream(device_));
    record(category_, name_, device_, detail_, begin_, Clock::now());
  } catch (...) {
    // A destructor must not throw; a failed wait is reported by the next GPU call.
  }
}

}  // namespace ember::trace

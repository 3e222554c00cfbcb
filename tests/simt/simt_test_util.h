// Helpers for the emulator's tests: run a body under every thread order and worker count.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/simt/simt.h"

namespace ember::simt_test {

struct Config {
  simt::Order order;
  uint64_t seed;
  int workers;
  std::string name() const {
    return simt::order_name(order) +
           (order == simt::Order::Random ? ":" + std::to_string(seed) : "") + ", " +
           std::to_string(workers) + " worker" + (workers == 1 ? "" : "s");
  }
};

// Forward, reverse and two random orders, each with one and two workers.
inline std::vector<Config> all_configs() {
  std::vector<Config> out;
  for (int w : {1, 2})
    for (Config c : {Config{simt::Order::Forward, 0, w}, Config{simt::Order::Reverse, 0, w},
                     Config{simt::Order::Random, 1, w}, Config{simt::Order::Random, 77, w}})
      out.push_back(c);
  return out;
}

// The thread orders the op and kernel tests run in on the emulator: forward, reverse and random
// (seed 7), one worker each, so every run is deterministic. EMBER_TEST_EMU_ORDERS=forward keeps
// the forward order only: the sanitizer build (test.sh) looks for memory errors, which the order
// does not change, and the three orders run in the main build. Another value is an error.
inline std::vector<Config> test_orders() {
  const char* env = std::getenv("EMBER_TEST_EMU_ORDERS");
  const std::string which = env != nullptr ? env : "all";
  if (which == "forward") return {{simt::Order::Forward, 0, 1}};
  if (which != "all")
    throw std::invalid_argument("EMBER_TEST_EMU_ORDERS: expected 'all' or 'forward', got '" +
                                which + "'");
  return {{simt::Order::Forward, 0, 1}, {simt::Order::Reverse, 0, 1}, {simt::Order::Random, 7, 1}};
}

// Sets the emulator's options for a scope, restoring the previous ones after: a thread order
// (the rest as they are), or a whole set of options.
class ScopedOptions {
 public:
  explicit ScopedOptions(const Config& c) : ScopedOptions(with_order(c)) {}
  explicit ScopedOptions(const simt::Options& o) : saved_(simt::options()) { simt::set_options(o); }
  ~ScopedOptions() { simt::set_options(saved_); }
  ScopedOptions(const ScopedOptions&) = delete;
  ScopedOptions& operator=(const ScopedOptions&) = delete;

 private:
  static simt::Options with_order(const Config& c) {
    simt::Options o = simt::options();
    o.order = c.order;
    o.seed = c.seed;
    o.workers = c.workers;
    return o;
  }
  simt::Options saved_;
};

}  // namespace ember::simt_test

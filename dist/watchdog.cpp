// The watchdog (dist/watchdog.h; Note [Timeouts and the watchdog]).
#include "dist/watchdog.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "dist/errors.h"

namespace ember::dist {

Watchdog::Watchdog(const std::string& host, int port, int rank, int size,
                   std::chrono::milliseconds timeout)
    : rank_(rank), size_(size) {
  interval_ =
      std::clamp(timeout / 10, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
  beat_store_ = std::make_unique<TcpStore>(host, port, false, timeout);
  query_store_ = std::make_unique<TcpStore>(host, port, false, timeout);
  beat_store_->set("hb/" + std::to_string(rank_), "0");
  thread_ = std::thread([this] { beat_loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::beat_loop() {
  const std::string key = "hb/" + std::to_string(rank_);
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    try {
      beat_store_->set(key, std::to_string(issued_.load(std::memory_order_relaxed)));
    } catch (const Error&) {
      return;  // the store is gone (rank 0 ended); a timeout's diagnosis will say so
    }
  }
}

std::string Watchdog::diagnose(uint64_t seq) {
  std::ostringstream out;
  const double stale = 3.0 * std::chrono::duration<double>(interval_).count() + 0.5;
  int named = 0;
  try {
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const std::string key = "hb/" + std::to_string(r);
      const double age = query_store_->age(key);
      const std::string sep = named++ ? "; " : "";
      if (age < 0) {
        out << sep << "rank " << r << " never joined";
        continue;
      }
      const uint64_t count = std::stoull(query_store_->get(key));
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f", age);
      if (age > stale) {
        out << sep << "rank " << r << " stopped answering (no heartbeat for " << secs
            << " s: killed, crashed or stopped?); its last heartbeat counted " << count
            << " collectives issued";
      } else if (count < seq) {
        out << sep << "rank " << r << " is alive but has issued only " << count
            << " collectives (this is #" << seq
            << "): it is behind, or runs collectives in another order";
      } else {
        --named;
      }
    }
  } catch (const Error& e) {
    return "rank 0, which hosts the store, is not answering (dead?): " + std::string(e.what());
  }
  if (named == 0)
    return "every rank is alive and reached this collective, yet it did not complete (a "
           "network or transport problem?)";
  return out.str();
}

}  // namespace ember::dist

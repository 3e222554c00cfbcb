// A ladder table for the plain benchmarks (bench_ladder, bench_conv_ladder): the rungs of one
// problem, each timed, checked against a float64 reference and shown with its rate, its
// fraction of the best rung and of the vendor rung (cuBLAS/cuDNN), or the reason it did not run.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "timing.h"

namespace ember::bench {

inline std::string fmt(const char* f, double a) {
  char buf[96];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

// Up to `limit` distinct output positions in [0, total): all of them when total <= limit, else
// a fixed random sample (with the first and last).
inline std::vector<int64_t> sample_positions(int64_t total, int64_t limit) {
  std::vector<int64_t> at;
  if (total <= limit) {
    for (int64_t i = 0; i < total; ++i) at.push_back(i);
    return at;
  }
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> pick(0, total - 1);
  at = {0, total - 1};
  while (static_cast<int64_t>(at.size()) < limit) at.push_back(pick(rng));
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

// One timed implementation of an op.
struct Rung {
  std::string name;
  bool vendor = false;
  double ms = NAN, err = NAN;
  std::string failure;  // why it did not run ("" when it ran)
  bool wrong = false;
};

// One problem's ladder: its title, the work per call, and how an output is checked.
class Ladder {
 public:
  // `work`: flops (unit "GFLOP/s") or bytes (unit "GB/s") per call. `error` maps an output,
  // copied to the host, to its error against the float64 reference; above `tol` is WRONG.
  Ladder(std::string title, std::string unit, double work, double tol,
         std::function<double(const std::vector<float>&)> error)
      : title_(std::move(title)),
        unit_(std::move(unit)),
        work_(work),
        tol_(tol),
        error_(std::move(error)) {}

  // Times `run` on `device` (median of `reps`, timing.h), which leaves its result in `out`, read
  // after the timed calls, and checks it. An exception is the rung's failure, shown in the table.
  void rung(Device device, int reps, const std::string& name, bool vendor, const Tensor* out,
            const std::function<void()>& run) {
    Rung r;
    r.name = name;
    r.vendor = vendor;
    try {
      r.ms = time_ms(device, reps, run);
      r.err = error_(out->to_vector<float>());
      r.wrong = !(r.err <= tol_);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      r.failure = what.substr(0, what.find('\n'));
    }
    rungs_.push_back(r);
  }
  // A rung that cannot run here, with the reason.
  void skip(const std::string& name, bool vendor, const std::string& why) {
    Rung r;
    r.name = name;
    r.vendor = vendor;
    r.failure = why;
    rungs_.push_back(r);
  }

  const std::vector<Rung>& rungs() const { return rungs_; }
  // The rate of a rung that ran (GFLOP/s or GB/s).
  double rate(const Rung& r) const { return work_ / (r.ms * 1e-3) * 1e-9; }
  // The best rate among the rungs that ran and were right; 0 when none.
  double best_rate() const {
    double best = 0;
    for (const Rung& r : rungs_)
      if (r.failure.empty() && !r.wrong) best = std::max(best, rate(r));
    return best;
  }

  // Prints the table; returns false when a rung was wrong.
  bool print() const {
    double vendor = 0;
    for (const Rung& r : rungs_)
      if (r.failure.empty() && !r.wrong && r.vendor) vendor = rate(r);
    const double best = best_rate();
    std::printf("\n== %s (%s)\n", title_.c_str(), unit_.c_str());
    std::printf("%-3s %-40s %12s %11s %8s %10s  %s\n", "#", "rung", unit_.c_str(), "ms", "of best",
                "of vendor", "check");
    bool ok = true;
    for (size_t i = 0; i < rungs_.size(); ++i) {
      const Rung& r = rungs_[i];
      if (!r.failure.empty()) {
        std::printf("%-3zu %-40s n/a: %s\n", i + 1, r.name.c_str(), r.failure.c_str());
        continue;
      }
      const double v = rate(r);
      const std::string of_best = best > 0 && !r.wrong ? fmt("%.2f", v / best) : "-";
      const std::string of_vendor = vendor > 0 && !r.wrong ? fmt("%.2f", v / vendor) : "-";
      const std::string check =
          (r.wrong ? "WRONG" : "ok") + fmt(" (err %.1e, ", r.err) + fmt("tol %.0e)", tol_);
      std::printf("%-3zu %-40s %12.4g %11.4f %8s %10s  %s\n", i + 1, r.name.c_str(), v, r.ms,
                  of_best.c_str(), of_vendor.c_str(), check.c_str());
      ok = ok && !r.wrong;
    }
    std::fflush(stdout);
    return ok;
  }

 private:
  std::string title_, unit_;
  double work_, tol_;
  std::function<double(const std::vector<float>&)> error_;
  std::vector<Rung> rungs_;
};

}  // namespace ember::bench

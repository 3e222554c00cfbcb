#include "cli/progress.h"

#include <unistd.h>

#include <cmath>

namespace ember::cli {

Progress::Progress(int64_t total, std::string label, FILE* out)
    : total_(total < 1 ? 1 : total),
      label_(std::move(label)),
      out_(out),
      tty_(isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)) {}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(int64_t done, int64_t items, const std::string& fields) {
  done_ = done;
  auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  } else {
    int64_t decile = done * 10 / total_;
    if (decile == last_decile_ || decile == 10) return;
    last_decile_ = decile;
  }
  last_draw_ = now;
  draw(done, items, fields, false);
}

void Progress::finish(int64_t items, const std::string& fields) { draw(done_, items, fields, true); }

void Progress::draw(int64_t done, int64_t items, const std::string& fields, bool final) {
  const double t = elapsed_seconds();
  const double rate = t > 0 ? static_cast<double>(items) / t : 0.0;
  const double frac = static_cast<double>(done) / static_cast<double>(total_);
  const double eta = frac > 0 ? t * (1.0 - frac) / frac : 0.0;
  char timing[96];
  if (final)
    std::snprintf(timing, sizeof timing, "%.0f samples/s, %.1fs", rate, t);
  else
    std::snprintf(timing, sizeof timing, "%.0f samples/s, ETA %.0fs", rate, std::ceil(eta));
  if (tty_) {
    constexpr int kWidth = 24;
    int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(out_, "\r\033[K%s [%s] %lld/%lld %s | %s", label_.c_str(), bar.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_), fields.c_str(), timing);
    if (final) std::fputc('\n', out_);
  } else {
    std::fprintf(out_, "%s %lld/%lld %s | %s\n", label_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), fields.c_str(), timing);
  }
  std::fflush(out_);
}

}  // namespace ember::cli

// A progress display for long loops: a redrawn bar with rate and ETA on a terminal, plain
// periodic lines when output goes to a file or a pipe (so logs stay readable).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ember::cli {

class Progress {
 public:
  // total: steps in the loop; label: shown first ("epoch 3/10"); out: where to draw.
  Progress(int64_t total, std::string label, FILE* out = stdout);
  // Reports that `done` steps are finished; `items` is the count of samples so far (for the
  // rate) and `fields` extra text ("loss 0.31 acc 92.0%"). Draws at most ~10 times a second
  // on a terminal, every ~10% otherwise.
  void update(int64_t done, int64_t items, const std::string& fields);
  // Draws the final state (the last step update() reported) and ends the line.
  void finish(int64_t items, const std::string& fields);
  double elapsed_seconds() const;

 private:
  void draw(int64_t done, int64_t items, const std::string& fields, bool final);

  int64_t total_;
  std::string label_;
  FILE* out_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int64_t last_decile_ = -1;
  int64_t done_ = 0;
};

}  // namespace ember::cli

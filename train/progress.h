// What a run shows while it trains: a progress bar with rate and ETA on a
// terminal, plain log lines otherwise, and log.txt in the run directory.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <ostream>
#include <string>

#include "train/checkpoint.h"

namespace emu::train {

class Progress {
 public:
  // mode: "on"/"true" always draws, "off"/"false" never, "auto" when stderr is
  // a terminal and the CI environment variable is unset or empty.
  Progress(const std::string& mode, int64_t total_steps, int64_t first_step);
  bool active() const { return active_; }
  // Redraws the bar (at most 10 times a second, and at the end of each epoch).
  void update(const TrainPosition& pos, int64_t total_epochs, int64_t per_epoch, double loss, double accuracy,
              double samples_per_second);
  // Erases the bar so a log line can take its place.
  void clear();

 private:
  bool active_ = false, drawn_ = false;
  int64_t total_steps_, first_step_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// Log lines to a stream and to <run dir>/log.txt; erases the progress bar first.
class RunLog {
 public:
  RunLog(std::ostream& out, const std::string& file, bool append);
  void set_progress(Progress* p) { progress_ = p; }
  void line(const std::string& s);

 private:
  std::ostream& out_;
  std::ofstream file_;
  Progress* progress_ = nullptr;
};

// "1:02:03" or "2:03"
std::string format_duration(double seconds);

}  // namespace emu::train

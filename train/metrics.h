// Per-epoch metrics of a run: one row per epoch, appended to metrics.jsonl
// (one JSON object per line) and metrics.csv (fixed columns, empty where a
// split is absent; written by train/csv.h) in the run directory. A resumed
// run keeps the rows up to the checkpoint's step (both files rewritten
// atomically with them) and appends from there.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <string>

namespace emu::train {

struct SplitResult {
  double loss = 0;      // mean over counted targets
  double accuracy = 0;  // fraction of counted targets predicted right
  int64_t counted = 0;  // targets that count (not -1)
};

struct MetricsRow {
  int64_t epoch = 0;                          // 1-based
  int64_t step = 0;                           // optimizer steps done at the end of the epoch
  double lr = 0;                              // the learning rate of the epoch's last step
  std::map<std::string, SplitResult> splits;  // "train", "val", "test"
  double seconds = 0;                         // the epoch's training and evaluation time
  double samples_per_second = 0;              // training examples per second of training time
};

// The best accuracy seen per split (for the summary).
struct BestAccuracy {
  std::map<std::string, std::pair<double, int64_t>> by_split;  // split -> (accuracy, epoch)
};

class MetricsFiles {
 public:
  // keep_until_step < 0: start both files afresh; otherwise keep the rows
  // whose step is <= keep_until_step (a resumed run) and append after them.
  MetricsFiles(const std::string& run_dir, int64_t keep_until_step);
  void write(const MetricsRow& row);
  const BestAccuracy& best() const { return best_; }

 private:
  void note(const std::string& split, double accuracy, int64_t epoch);
  std::ofstream jsonl_, csv_;
  BestAccuracy best_;
};

std::string metrics_json(const MetricsRow& row);
// "epoch 3/10: train loss 0.1234 acc 96.10% | test loss ... acc ...% | lr 0.05 | 12.3 s, 812 samples/s"
std::string describe_row(const MetricsRow& row, int64_t total_epochs);

}  // namespace emu::train

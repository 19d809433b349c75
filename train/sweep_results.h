// What a sweep's run folder says about its run (finished or not, and its
// figures), and the results.csv / aggregate.csv tables built from them
// (columns in docs/studies.md), written with train/csv.h.
//
// A run is finished when its folder has summary.json (status ok), or a
// sweep_status.json marker with status diverged (the loss became NaN/Inf, exit
// code 3) or failed (any other error; the reason is the child's last error line).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "train/cost_report.h"
#include "train/sweep.h"

namespace emu::train {

struct RunRecord {
  std::string status;  // ok | diverged | failed
  std::string reason;  // diverged/failed: the error line
  int exit_code = 0;
  // Accuracies are fractions (0..1) here; the tables print percentages.
  std::optional<double> final_train_loss, final_val_acc, final_test_acc, best_val_acc, best_test_acc;
  std::optional<double> wall_s;  // the child's wall time (else summary.json's seconds)
  std::optional<int64_t> steps;
};

// The marker the sweep writes into a run folder after the child ends.
constexpr const char* kRunStatusFile = "sweep_status.json";

// The finished run in `run_dir`, or nothing when the run has not finished
// (no folder, or a folder left by an interrupted run).
std::optional<RunRecord> read_run(const std::string& run_dir);
// Writes `<run_dir>/sweep_status.json` (atomically) for a run that ended.
void write_run_status(const std::string& run_dir, const RunRecord& r);

// The value of `metric` (a results.csv column: final_test_acc, final_val_acc,
// best_test_acc, best_val_acc, in percent; final_train_loss) of a record;
// nothing when the run has no such figure (diverged, failed, no such split).
std::optional<double> metric_value(const RunRecord& r, const std::string& metric);
// The metric names metric_value() knows.
const std::vector<std::string>& metric_names();

// The tables for the runs finished so far (records[i] belongs to runs[i]).
// results.csv: one row per finished run, in run order; aggregate.csv: one row
// per point with a finished run (mean, sample std, min and max over seeds).
// With `costs` (one per point, docs/cost.md), both tables end in the cost
// columns (cost_column_names(); empty where a point's cost is unknown).
std::string results_csv(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                        const std::vector<SweepRun>& runs,
                        const std::vector<std::optional<RunRecord>>& records, const std::string& runs_dir,
                        const std::vector<std::optional<CostColumns>>* costs = nullptr);
std::string aggregate_csv(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                          const std::vector<SweepRun>& runs,
                          const std::vector<std::optional<RunRecord>>& records,
                          const std::vector<std::optional<CostColumns>>* costs = nullptr);

}  // namespace emu::train

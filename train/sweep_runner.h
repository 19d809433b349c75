// Runs training runs as child processes (`emutrain train BASE --set ... --out
// RUN_DIR`), a few at once, and records how each ended (train/sweep_results.h).
// Used by `emutrain sweep` and `emutrain search`.
//
// Each child starts from scratch in its run folder (an unfinished folder left by
// an interrupted sweep is removed first), its stdout and stderr go to
// <run dir>/output.log, it dies with the sweep (PR_SET_PDEATHSIG), and it stays
// in the sweep's process group, so Ctrl-C or a kill of the group stops all of
// them. On SIGINT, SIGTERM or SIGHUP the sweep kills its children and returns.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "train/sweep.h"
#include "train/sweep_results.h"

namespace emu::train {

struct RunJob {
  std::string id;                 // the run's folder name under runs_dir
  std::string label;              // for progress lines
  std::vector<std::string> sets;  // --set assignments, in order
};

struct RunnerOptions {
  std::string exe = "/proc/self/exe";  // the emutrain binary the children run
  std::string recipe;                  // the base recipe
  std::string runs_dir;                // the run folders' parent
  std::string start_log;               // appends "start <id>" and "end <id> <status>" lines ("" = none)
  int jobs = 1;                        // runs at once
  bool retry_failed = false;           // run again runs recorded as failed (diverged ones stay done)
};

// The signal that interrupted the last run_jobs() (0: none).
int interrupting_signal();

// Runs every job whose records[i] is empty (or failed, with retry_failed), at
// most `jobs` at once, in order; fills records[i] and calls on_finished(i)
// after each. Returns false when a signal interrupted it (children killed and
// not recorded).
bool run_jobs(const RunnerOptions& options, const std::vector<RunJob>& jobs,
              std::vector<std::optional<RunRecord>>* records, const std::function<void(size_t)>& on_finished);

// The argument list of one child: train RECIPE --set ... --out RUN_DIR.
std::vector<std::string> child_args(const RunnerOptions& options, const RunJob& job);

// `emutrain sweep`: what the command line gives besides the sweep file.
struct SweepOptions {
  std::string out;       // "" = sweeps/<sweep name>
  int jobs = 0;          // 0 = the sweep file's
  int threads = -1;      // -1 = the sweep file's
  bool dry_run = false;  // list the runs and check their recipes, run nothing
  bool retry_failed = false;
  std::vector<std::string> sets;  // extra --set for every run, after the sweep's own
  std::string exe = "/proc/self/exe";
  std::ostream* log = nullptr;  // progress lines (default std::cout)
  // The cost columns of results.csv and aggregate.csv (docs/cost.md): each point's
  // training step counted once (cached in <out>/cost/<point>.csv) and priced with
  // this table ("" = the default Horowitz table); false leaves the columns out.
  bool cost = true;
  std::string cost_model;
};

// Checks every run's recipe, then runs the runs not yet finished, rewriting
// <out>/results.csv and aggregate.csv after each. Returns the exit code: 0 when
// every run finished (some may have diverged or failed), 128 + signal when interrupted.
int run_sweep(const SweepSpec& spec, const SweepOptions& options);

// "45 s", "12 min", "1 h 05 min".
std::string eta_text(double seconds);

}  // namespace emu::train

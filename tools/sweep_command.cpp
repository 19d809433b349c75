// `emutrain sweep`: train a base recipe over the points of a sweep file
// (docs/studies.md), several runs at once, resuming where a previous
// invocation stopped.
//
//   emutrain sweep SWEEP.yaml [--out DIR] [--jobs J] [--threads T] [--dry-run] [--retry-failed] [--set
//   K=V]...
//                  [--cost-model FILE] [--no-cost]
//
// Exit codes: 0 every run finished (some may have diverged or failed: see
// results.csv), 2 an error (the sweep file, a point's recipe), 128+N when
// signal N interrupted it (run the same command again to finish).
#include <memory>

#include "tools/commands.h"
#include "train/sweep_runner.h"

namespace emu::cli {
namespace {

struct SweepArgs {
  std::string file;
  train::SweepOptions o;
};

Runner add_sweep_command(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("sweep", "Train a recipe over the points of a sweep file (docs/studies.md)");
  auto a = std::make_shared<SweepArgs>();
  cmd->add_option("sweep", a->file, "The sweep file (YAML)")->required();
  cmd->add_option("--out", a->o.out,
                  "Output folder (default sweeps/<sweep name>); runs go to <out>/runs/<run id>");
  cmd->add_option("--jobs", a->o.jobs, "Runs at once (default: the sweep file's `jobs`)");
  cmd->add_option("--threads", a->o.threads, "CPU threads per run (default: the sweep file's `threads`)");
  cmd->add_flag("--dry-run", a->o.dry_run, "List the runs and check their recipes; train nothing");
  cmd->add_flag("--retry-failed", a->o.retry_failed,
                "Run again the runs recorded as failed (not the diverged)");
  cmd->add_option(
      "--cost-model", a->o.cost_model,
      "Energy/area table of the cost columns (docs/cost.md; default: Horowitz ISSCC 2014, 45 nm)");
  cmd->add_flag(
      "--no-cost", [a](int64_t) { a->o.cost = false; }, "Leave the cost columns out of the tables");
  cmd->add_option("--set", a->o.sets, "Set a recipe key in every run, after the sweep's own (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return [a]() -> int { return train::run_sweep(train::load_sweep(a->file), a->o); };
}

}  // namespace

EMU_COMMAND("sweep", add_sweep_command);

}  // namespace emu::cli

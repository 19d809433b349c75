// `emutrain train` and `emutrain eval`: run a recipe (docs/recipes.md).
//
//   emutrain train RECIPE [--set KEY=VALUE]... [--out DIR] [--resume CKPT|RUNDIR]
//   emutrain train --resume CKPT|RUNDIR              (the recipe stored in the checkpoint)
//   emutrain eval RECIPE --checkpoint CKPT|RUNDIR [--set KEY=VALUE]...
//   emutrain train RECIPE --nproc N ...               (execs mpirun -np N emutrain train RECIPE ...)
//   mpirun -np N emutrain train RECIPE ...            (data-parallel over N ranks, docs/parallel.md)
//
// Exit codes: 0 done, 2 an error (recipe, data, checkpoint; one line on
// stderr), 3 the loss became NaN/Inf (the line says where).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/comm.h"
#include "core/comm_mpi.h"
#include "tools/commands.h"
#include "train/trainer.h"

namespace emu::cli {
namespace {

struct TrainArgs {
  std::string recipe, out, resume, checkpoint;
  std::vector<std::string> sets;
  int nproc = 0;
};

// The mpirun (or mpiexec) on PATH, or "".
std::string find_on_path(const char* name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / name;
    if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

// --nproc N: replaces this process by `mpirun -np N <this emutrain> train <the same arguments>`.
[[noreturn]] void exec_mpirun(const TrainArgs& a) {
  std::string mpirun = find_on_path("mpirun");
  if (mpirun.empty()) mpirun = find_on_path("mpiexec");
  if (mpirun.empty())
    throw std::runtime_error("--nproc: mpirun is not on PATH (install openmpi-bin: tools/install_deps.sh)");
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw std::runtime_error("--nproc: cannot find this executable (/proc/self/exe)");
  if (geteuid() == 0) {  // OpenMPI refuses root unless told; a container's root is the usual case
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  std::vector<std::string> args = {mpirun, "--oversubscribe", "-np", std::to_string(a.nproc), self, "train"};
  if (!a.recipe.empty()) args.push_back(a.recipe);
  for (const std::string& s : a.sets) args.insert(args.end(), {"--set", s});
  if (!a.out.empty()) args.insert(args.end(), {"--out", a.out});
  if (!a.resume.empty()) args.insert(args.end(), {"--resume", a.resume});
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execv(mpirun.c_str(), argv.data());
  throw std::runtime_error("--nproc: cannot run " + mpirun);
}

void add_set_option(CLI::App* cmd, TrainArgs* a) {
  cmd->add_option("--set", a->sets,
                  "Override a recipe key after the file, e.g. --set optimizer.lr=0.05 (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

train::Recipe recipe_for(const TrainArgs& a, const std::string& checkpoint) {
  if (!a.recipe.empty()) return train::load_recipe(a.recipe, a.sets);
  if (checkpoint.empty())
    throw std::runtime_error("give a RECIPE (or --resume CKPT to continue a run with its recipe)");
  const std::string path = train::resolve_checkpoint(checkpoint);
  train::CheckpointState s = train::read_checkpoint_state(path);
  return train::parse_recipe(s.recipe_yaml, path + " (its stored recipe)", a.sets, "run");
}

Runner add_train_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("train", "Train a model from a YAML recipe (docs/recipes.md)");
  auto a = std::make_shared<TrainArgs>();
  cmd->add_option("recipe", a->recipe, "The recipe (YAML)");
  add_set_option(cmd, a.get());
  cmd->add_option("--out", a->out,
                  "Run directory (default runs/<name>-<time>; on --resume the checkpoint's run)");
  cmd->add_option("--resume", a->resume,
                  "Continue from a checkpoint file or a run directory's newest checkpoint");
  cmd->add_option("--nproc", a->nproc,
                  "Data-parallel over N CPU ranks: runs mpirun -np N with these arguments")
      ->check(CLI::Range(1, 4096));
  return [a]() -> int {
    if (a->nproc > 0) exec_mpirun(*a);
    if (started_by_mpi()) set_world(make_mpi_communicator());
    Communicator& w = world();
    try {
      train::Recipe recipe = recipe_for(*a, a->resume);
      train::TrainOptions o;
      o.out_dir = a->out;
      o.resume = a->resume;
      try {
        train::train_recipe(recipe, o);
      } catch (const train::NonFiniteLoss& e) {
        if (w.size() > 1) w.abort(fmt::format("rank {}: {}", w.rank(), e.what()));
        std::cout.flush();
        std::fprintf(stderr, "emutrain: %s\n", e.what());
        return 3;
      }
    } catch (const std::exception& e) {
      // One rank's error ends every rank (they would wait in the next collective until the timeout).
      if (w.size() > 1) w.abort(fmt::format("rank {}: {}", w.rank(), e.what()));
      throw;
    }
    return 0;
  };
}

Runner add_eval_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a checkpoint on the recipe's test split");
  auto a = std::make_shared<TrainArgs>();
  cmd->add_option("recipe", a->recipe, "The recipe (YAML; default: the one stored in the checkpoint)");
  cmd->add_option("--checkpoint", a->checkpoint, "A checkpoint file or a run directory")->required();
  add_set_option(cmd, a.get());
  return [a]() -> int {
    train::Recipe recipe = recipe_for(*a, a->checkpoint);
    std::string what;
    train::SplitResult r = train::evaluate_checkpoint(recipe, a->checkpoint, &what);
    std::cout << fmt::format("test: loss {:.4f} accuracy {:.2f}% ({} targets; {})", r.loss, 100 * r.accuracy,
                             r.counted, what)
              << std::endl;
    return 0;
  };
}

}  // namespace

EMU_COMMAND("train", add_train_command);
EMU_COMMAND("eval", add_eval_command);

}  // namespace emu::cli

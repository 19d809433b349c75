// `emutrain train` and `emutrain eval`: run a recipe (docs/recipes.md).
//
//   emutrain train RECIPE [--set KEY=VALUE]... [--out DIR] [--resume CKPT|RUNDIR]
//   emutrain train --resume CKPT|RUNDIR              (the recipe stored in the checkpoint)
//   emutrain eval RECIPE --checkpoint CKPT|RUNDIR [--set KEY=VALUE]...
//
// Exit codes: 0 done, 2 an error (recipe, data, checkpoint; one line on
// stderr), 3 the loss became NaN/Inf (the line says where).
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "tools/commands.h"
#include "train/trainer.h"

namespace emu::cli {
namespace {

struct TrainArgs {
  std::string recipe, out, resume, checkpoint;
  std::vector<std::string> sets;
};

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
  return [a]() -> int {
    train::Recipe recipe = recipe_for(*a, a->resume);
    train::TrainOptions o;
    o.out_dir = a->out;
    o.resume = a->resume;
    try {
      train::train_recipe(recipe, o);
    } catch (const train::NonFiniteLoss& e) {
      std::cout.flush();
      std::fprintf(stderr, "emutrain: %s\n", e.what());
      return 3;
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
